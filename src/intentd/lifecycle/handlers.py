"""Applying facts to intents: one database transaction each; load, decide, save.

Every handler is idempotent. A deposit is unique on its identity ``(chain, tx_hash,
token, transfer_index)``, the same on every fork (a transfer re-mined elsewhere is the
same deposit, its new block recorded), and an action result on its ``id``
(``applied_results``); both are checked under the intent's row lock, so a message
applied twice (redelivery after a crash between the database commit and the offset
commit) changes nothing the second time. The intent,
its new deposit, the actions it decided and the events it emitted (outbox row and
event log row, ``adapters.event_log``) commit together.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

import orjson
import structlog

from intentd import observability as metrics
from intentd.adapters import deposit_holds, event_log, intent_store, lifecycle_store
from intentd.adapters.intent_store import Connection
from intentd.domain.events import envelope, mode_of
from intentd.domain.intent import (
    ActionKind,
    Deposit,
    Disposition,
    Intent,
    RefundReason,
)
from intentd.domain.status import IntentStatus
from intentd.intents.record import IntentRow, render_record
from intentd.messages import ActionResultMessage, DepositMessage, RetractionMessage, events_topic
from intentd.settings import Settings

log = structlog.get_logger()


class Unappliable(ValueError):
    """A well-formed message that contradicts the store (it goes to the dead-letter topic)."""


class Outcome(StrEnum):
    CREDITED = "credited"
    REFUND_OWED = "refund_owed"
    IGNORED = "ignored"
    UNMATCHED = "unmatched"
    INTERNAL = "internal"
    DUPLICATE = "duplicate"
    RELOCATED = "relocated"
    RETRACTED = "retracted"
    RETAINED = "retained"
    RETRACTION_NOOP = "retraction_noop"
    RETRACTION_ALERT = "retraction_alert"
    APPLIED = "applied"
    STALE = "stale"
    EXPIRED = "expired"
    NOT_DUE = "not_due"


def deposit_of(message: DepositMessage | RetractionMessage, amount: int = 0) -> Deposit:
    if isinstance(message, DepositMessage):
        return Deposit(
            chain=message.chain,
            tx_hash=message.tx_hash,
            log_index=message.log_index,
            block_number=message.block_number,
            block_hash=message.block_hash,
            block_time=datetime.fromtimestamp(message.block_time, UTC),
            token=message.token,
            from_address=message.from_address,
            to_address=message.to_address,
            amount=message.amount,
        )
    return Deposit(
        chain=message.chain,
        tx_hash=message.tx_hash,
        log_index=message.log_index,
        block_number=message.block_number,
        block_hash=message.block_hash,
        block_time=datetime.fromtimestamp(0, UTC),
        token="",
        from_address="",
        to_address=message.to_address,
        amount=amount,
    )


async def apply_deposit(
    conn: Connection, settings: Settings, message: DepositMessage, *, now: datetime
) -> Outcome:
    """Record one deposit and everything it causes, in one transaction."""
    deposit = deposit_of(message)
    async with conn.transaction():
        row = await intent_store.get_by_address(conn, deposit.to_address, lock=True)
        index = message.transfer_index
        seen = await lifecycle_store.find_deposit(conn, deposit, index, lock=True)
        if seen is not None and seen.disposition is not Disposition.RETRACTED:
            return await _seen_again(conn, seen, deposit, index)
        revive = seen.id if seen is not None else None
        if row is None:
            await lifecycle_store.record_deposit(
                conn,
                deposit,
                transfer_index=index,
                intent_id=None,
                disposition=Disposition.UNMATCHED,
                reason=None,
                revive=revive,
            )
            log.warning("deposit to an address no intent has", deposit=message.id)
            return _count(deposit, Outcome.UNMATCHED)
        if await lifecycle_store.is_own_transaction(conn, deposit.chain, deposit.tx_hash):
            await lifecycle_store.record_deposit(
                conn,
                deposit,
                transfer_index=index,
                intent_id=row.id,
                disposition=Disposition.INTERNAL,
                reason=None,
                revive=revive,
            )
            return _count(deposit, Outcome.INTERNAL)
        chain = settings.chains.get(deposit.chain)
        intent = _load(settings, row)
        token = chain.token(deposit.token) if chain is not None else None
        decision = intent.apply_deposit(
            deposit,
            token_supported=token is not None,
            min_sweep=token.min_sweep_units if token is not None else 0,
        )
        deposit_id = await lifecycle_store.record_deposit(
            conn,
            deposit,
            transfer_index=index,
            intent_id=row.id,
            disposition=decision.disposition,
            reason=decision.reason,
            revive=revive,
        )
        linked = deposit_id if decision.disposition is Disposition.REFUND_OWED else None
        await _save(conn, settings, row, intent, now=now, deposit_id=linked)
        if row.status is IntentStatus.PENDING and intent.status is IntentStatus.FUNDED:
            waited = (now - deposit.block_time).total_seconds()
            metrics.DEPOSIT_TO_FUNDED.labels(deposit.chain).observe(max(waited, 0.0))
        log.info(
            "deposit recorded",
            intent_id=row.id,
            tx_hash=deposit.tx_hash,
            disposition=decision.disposition.value,
            funding_status=intent.funding.value,
            intent_status=intent.status.value,
        )
        return _count(deposit, Outcome(decision.disposition.value))


async def apply_retraction(
    conn: Connection, settings: Settings, message: RetractionMessage, *, now: datetime
) -> Outcome:
    """Undo a deposit whose block a reorg orphaned, if nothing irreversible followed.

    If something did, the deposit is marked orphaned and the intent's spending actions
    on its chain are held (``adapters.deposit_holds``) until the same transfer is seen
    again, instead of letting a refund spend funds that are, for now, not there.
    """
    async with conn.transaction():
        row = await intent_store.get_by_address(conn, message.to_address, lock=True)
        seen = await lifecycle_store.find_published(
            conn, message.chain, message.tx_hash, message.block_hash, message.log_index
        )
        if seen is None or seen.disposition is Disposition.RETRACTED:
            return Outcome.RETRACTION_NOOP
        if seen.disposition is Disposition.CREDITED:
            assert row is not None
            intent = _load(settings, row)
            was_funded = intent.status is IntentStatus.FUNDED
            if not intent.retract(deposit_of(message, seen.amount)):
                return await _hold(conn, message, seen, row.status.value)
            if (
                was_funded
                and intent.status is IntentStatus.PENDING
                and not await lifecycle_store.cancel_prefill(conn, row.id)
            ):
                return await _hold(conn, message, seen, "prefill already signed")
            await _save(conn, settings, row, intent, now=now)
        elif seen.disposition is Disposition.REFUND_OWED and not (
            await lifecycle_store.cancel_deposit_refund(conn, seen.id)
        ):
            return await _hold(conn, message, seen, "refund already signed")
        await lifecycle_store.mark_retracted(conn, seen.id)
        log.warning("deposit retracted after reorg", deposit=message.id)
        return Outcome.RETRACTED


async def apply_action_result(
    conn: Connection, settings: Settings, message: ActionResultMessage, *, now: datetime
) -> Outcome:
    """Move the intent on from what became of one of its actions."""
    async with conn.transaction():
        row = await intent_store.lock_by_id(conn, message.intent_id)
        if row is None or not await lifecycle_store.mark_result_applied(conn, message.id):
            return Outcome.DUPLICATE
        intent = _load(settings, row)
        kind = ActionKind(message.action_kind)
        if kind is ActionKind.PREFILL:
            _prefill_result(settings, intent, message)
            if row.status is not IntentStatus.COMPLETED and intent.status is IntentStatus.COMPLETED:
                waited = await lifecycle_store.action_age(conn, message.action_id)
                metrics.FUNDED_TO_COMPLETED.labels(message.chain).observe(waited)
        elif kind is ActionKind.USER_REFUND and message.event == "confirmed":
            found = await lifecycle_store.action_reason(conn, message.action_id)
            if found is None or found[0] is None:
                raise Unappliable(
                    f"result {message.id}: action {message.action_id} is not a user refund"
                    " with a reason"
                )
            reason, token, amount = found
            intent.refund_confirmed(
                reason=RefundReason(reason),
                chain=message.chain,
                token=token,
                amount=amount,
                amount_sent=message.amount_sent or 0,
                gas_cost=message.gas_cost or 0,
                tx_hash=message.tx_hash or "",
            )
        elif message.event == "failed":
            metrics.ACTION_ALERTS.labels(kind.value).inc()
            log.error(
                "an action failed for good; operator action needed",
                intent_id=row.id,
                action_id=message.action_id,
                kind=kind.value,
                error=message.error,
            )
        await _save(conn, settings, row, intent, now=now)
        return Outcome.APPLIED


def _prefill_result(settings: Settings, intent: Intent, message: ActionResultMessage) -> None:
    if message.event == "sent":
        if intent.status is IntentStatus.FUNDED:
            relayer = settings.chains[intent.terms.destination_chain].relayer.lower()
            intent.prefill_sent(tx_hash=message.tx_hash or "", relayer=relayer)
    elif message.event == "confirmed":
        if intent.status is IntentStatus.FUNDED:  # "sent" not seen yet: both at once
            relayer = settings.chains[intent.terms.destination_chain].relayer.lower()
            intent.prefill_sent(tx_hash=message.tx_hash or "", relayer=relayer)
        fee_account = settings.chains[intent.terms.source_chain].fee_account.lower()
        intent.prefill_confirmed(block_number=message.block_number or 0, fee_account=fee_account)
    elif intent.status in (IntentStatus.FUNDED, IntentStatus.INITIATED):
        intent.prefill_failed()


async def expire(conn: Connection, settings: Settings, intent_id: int, *, now: datetime) -> Outcome:
    """Expire one intent if it is still PENDING past ``expires_at``."""
    async with conn.transaction():
        row = await intent_store.lock_by_id(conn, intent_id)
        if row is None:
            return Outcome.NOT_DUE
        intent = _load(settings, row)
        if not intent.expire(now):
            return Outcome.NOT_DUE
        await _save(conn, settings, row, intent, now=now)
        log.info(
            "intent expired",
            intent_id=intent_id,
            intent_status=intent.status.value,
            received=intent.received,
        )
        return Outcome.EXPIRED


def _load(settings: Settings, row: IntentRow) -> Intent:
    """The intent of ``row``, with ``tokenIn``'s minimum refund from the configuration."""
    chain = settings.chains.get(row.source_chain)
    token = chain.token(row.token_in) if chain is not None else None
    return row.intent(min_sweep=token.min_sweep_units if token is not None else 0)


async def _save(
    conn: Connection,
    settings: Settings,
    row: IntentRow,
    intent: Intent,
    *,
    now: datetime,
    deposit_id: int | None = None,
) -> None:
    """Store the intent if it changed, then its actions and events; report what it retained."""
    for kept in intent.retained:
        reason = kept.reason.value if kept.reason else "fees"
        metrics.RETAINED.labels(kept.chain, kept.kind.value, reason).inc()
        log.info(
            "amount below the token's min_sweep retained at the intent address",
            intent_id=row.id,
            kind=kept.kind.value,
            token=kept.token,
            amount=kept.amount,
            reason=reason,
        )
    changed = (
        intent.status,
        intent.received,
        intent.event_sequence,
        intent.tx_hash,
        intent.refunded,
    ) != (row.status, row.received, row.event_sequence, row.tx_hash, row.refunded)
    if changed:
        await intent_store.save_intent(conn, intent, expected_version=row.version)
        if intent.status is not row.status:
            metrics.TRANSITIONS.labels(row.status.value, intent.status.value).inc()
    for action in intent.actions:
        await lifecycle_store.create_action(
            conn,
            intent_id=row.id,
            action=action,
            address_index=row.address_index,
            deposit_id=deposit_id,
        )
    if not intent.events:
        return
    updated = await intent_store.get_by_id(conn, row.id)
    assert updated is not None
    record = render_record(updated)
    topic = events_topic(settings.kafka.topic_prefix)

    def decimals_of(chain: str, token: str) -> int:
        found = settings.chains[chain].token(token) if chain in settings.chains else None
        return found.decimals if found is not None else row.asset_token_decimals

    source = settings.chains.get(row.source_chain)
    mode = mode_of(source.network if source is not None else "test")
    for event in intent.events:
        body = envelope(
            event,
            intent_id=row.id,
            record=record,
            decimals=row.asset_token_decimals,
            created_at=now,
            mode=mode,
            decimals_of=decimals_of,
        )
        payload = orjson.dumps(body)
        await lifecycle_store.enqueue(conn, topic=topic, key=str(row.id), payload=payload)
        await event_log.record(
            conn,
            intent_id=row.id,
            client_id=row.client_id,
            envelope=body,
            payload=payload,
            created_at=now,
        )


async def _seen_again(
    conn: Connection,
    seen: lifecycle_store.StoredDeposit,
    deposit: Deposit,
    transfer_index: int | None,
) -> Outcome:
    """A recorded deposit seen again: a duplicate, or the same transfer re-mined elsewhere.

    A re-mined transfer keeps its record, now with its new block; if a retraction of it
    could not be undone, the actions held since then are released (also when its very
    block is canonical again). A transaction re-mined elsewhere that makes another
    transfer at the same position (another amount or recipient) is not that deposit:
    it is refused (dead-lettered with its reason) and releases nothing.
    """
    if (
        seen.block_hash == deposit.block_hash
        and seen.transfer_index is not None
        and not seen.orphaned
    ):
        return Outcome.DUPLICATE
    if seen.amount != deposit.amount or seen.to_address != deposit.to_address:
        metrics.UNCREDIT_ALERTS.labels(deposit.chain).inc()
        log.error(
            "a re-mined transaction made another transfer at a recorded deposit's position;"
            " operator action needed",
            tx_hash=deposit.tx_hash,
            recorded=f"{seen.amount} to {seen.to_address}",
            seen=f"{deposit.amount} to {deposit.to_address}",
            orphaned=seen.orphaned,
        )
        raise Unappliable(
            f"deposit {deposit.chain}:{deposit.tx_hash}: the transaction now makes another"
            f" transfer ({deposit.amount} to {deposit.to_address}) than the one recorded"
            f" ({seen.amount} to {seen.to_address})"
        )
    await lifecycle_store.relocate(conn, seen, deposit, transfer_index)
    if seen.orphaned and seen.intent_id is not None:
        released = await deposit_holds.release(conn, seen.intent_id, deposit.chain)
        log.warning(
            "an orphaned deposit is back on chain; held actions released",
            intent_id=seen.intent_id,
            tx_hash=deposit.tx_hash,
            block_number=deposit.block_number,
            released=released,
        )
    return Outcome.DUPLICATE if seen.block_hash == deposit.block_hash else Outcome.RELOCATED


async def _hold(
    conn: Connection,
    message: RetractionMessage,
    seen: lifecycle_store.StoredDeposit,
    state: str,
) -> Outcome:
    """A retraction that cannot be undone: hold the intent's spending actions, alert."""
    held = 0
    if seen.intent_id is not None:
        held = await deposit_holds.hold(conn, seen.id, seen.intent_id, message.chain)
    metrics.UNCREDIT_ALERTS.labels(message.chain).inc()
    log.error(
        "reorg removed a deposit that can no longer be undone; the intent's spending"
        " actions are held until it is back on chain (operator alert if it is not)",
        deposit=message.id,
        state=state,
        held=held,
    )
    return Outcome.RETRACTION_ALERT


def _count(deposit: Deposit, outcome: Outcome) -> Outcome:
    metrics.DEPOSITS.labels(deposit.chain, outcome.value).inc()
    return outcome
