"""Applying chain messages: one database transaction each; load, decide, save.

Each handler is idempotent: a message applied twice (redelivery after a crash
between the database commit and the offset commit) changes nothing the second
time, because the deposit's unique key ``(chain, tx_hash, log_index)`` is checked
under the intent's row lock.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

import orjson
import structlog

from intentd import observability as metrics
from intentd.adapters import intent_store, lifecycle_store
from intentd.adapters.intent_store import Connection
from intentd.domain.events import PendingEvent, envelope
from intentd.domain.funding import Deposit, Disposition
from intentd.intents.record import render_record
from intentd.messages import DepositMessage, RetractionMessage, events_topic
from intentd.settings import Settings

log = structlog.get_logger()


class Outcome(StrEnum):
    CREDITED = "credited"
    REFUND_OWED = "refund_owed"
    IGNORED = "ignored"
    UNMATCHED = "unmatched"
    DUPLICATE = "duplicate"
    RETRACTED = "retracted"
    RETRACTION_NOOP = "retraction_noop"
    RETRACTION_ALERT = "retraction_alert"


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
        seen = await lifecycle_store.find_deposit(
            conn, deposit.chain, deposit.tx_hash, deposit.log_index
        )
        if seen is not None and seen.disposition is not Disposition.RETRACTED:
            return Outcome.DUPLICATE
        if row is None:
            await lifecycle_store.record_deposit(
                conn, deposit, intent_id=None, disposition=Disposition.UNMATCHED, reason=None
            )
            log.warning("deposit to an address no intent has", deposit=message.id)
            return _count(deposit, Outcome.UNMATCHED)
        chain = settings.chains.get(deposit.chain)
        funding = row.funding()
        decision = funding.apply_deposit(
            deposit, token_supported=chain is not None and chain.token(deposit.token) is not None
        )
        deposit_id = await lifecycle_store.record_deposit(
            conn,
            deposit,
            intent_id=row.id,
            disposition=decision.disposition,
            reason=decision.reason,
        )
        if decision.disposition is Disposition.REFUND_OWED:
            assert decision.reason is not None
            await lifecycle_store.owe_refund(
                conn,
                intent_id=row.id,
                deposit=deposit,
                deposit_id=deposit_id,
                to_address=row.refund_address,
                reason=decision.reason,
            )
        if decision.disposition is Disposition.CREDITED:
            await intent_store.save_funding(conn, funding, expected_version=row.version)
            if funding.status is not row.status:
                metrics.TRANSITIONS.labels(row.status.value, funding.status.value).inc()
            await _emit(conn, settings, funding.id, funding.events, now=now)
        log.info(
            "deposit recorded",
            intent_id=row.id,
            tx_hash=deposit.tx_hash,
            disposition=decision.disposition.value,
            funding_status=funding.funding.value,
            intent_status=funding.status.value,
        )
        return _count(deposit, Outcome(decision.disposition.value))


async def apply_retraction(
    conn: Connection, settings: Settings, message: RetractionMessage
) -> Outcome:
    """Undo a deposit whose block a reorg orphaned, if nothing irreversible followed."""
    async with conn.transaction():
        row = await intent_store.get_by_address(conn, message.to_address, lock=True)
        seen = await lifecycle_store.find_deposit(
            conn, message.chain, message.tx_hash, message.log_index, lock=True
        )
        if (
            seen is None
            or seen.block_hash != message.block_hash
            or seen.disposition is Disposition.RETRACTED
        ):
            return Outcome.RETRACTION_NOOP
        if seen.disposition is Disposition.CREDITED:
            assert row is not None
            funding = row.funding()
            if not funding.retract(deposit_of(message, seen.amount)):
                return _alert(message, row.status.value)
            await intent_store.save_funding(conn, funding, expected_version=row.version)
        elif seen.disposition is Disposition.REFUND_OWED and not (
            await lifecycle_store.cancel_owed_refund(conn, seen.id)
        ):
            return _alert(message, "refund already started")
        await lifecycle_store.mark_retracted(conn, seen.id)
        log.warning("deposit retracted after reorg", deposit=message.id)
        return Outcome.RETRACTED


def _alert(message: RetractionMessage, state: str) -> Outcome:
    metrics.UNCREDIT_ALERTS.labels(message.chain).inc()
    log.error(
        "reorg removed a deposit that can no longer be undone; operator action needed",
        deposit=message.id,
        state=state,
    )
    return Outcome.RETRACTION_ALERT


def _count(deposit: Deposit, outcome: Outcome) -> Outcome:
    metrics.DEPOSITS.labels(deposit.chain, outcome.value).inc()
    return outcome


async def _emit(
    conn: Connection,
    settings: Settings,
    intent_id: int,
    events: list[PendingEvent],
    *,
    now: datetime,
) -> None:
    if not events:
        return
    row = await intent_store.get_by_id(conn, intent_id)
    assert row is not None
    record = render_record(row)
    topic = events_topic(settings.kafka.topic_prefix)
    for event in events:
        body = envelope(
            event,
            intent_id=intent_id,
            record=record,
            decimals=row.asset_token_decimals,
            created_at=now,
        )
        await lifecycle_store.enqueue(
            conn, topic=topic, key=str(intent_id), payload=orjson.dumps(body)
        )
