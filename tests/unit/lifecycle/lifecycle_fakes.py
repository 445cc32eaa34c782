"""In-memory fakes of the lifecycle's ports: a unit of work over dictionaries and its
store (the consumer's inbox and publisher: ``lifecycle_inbox_fakes.py``; the expiry's, the
hold watch's and the trigger verifier's reads: ``lifecycle_due_fakes.py``; the nodes:
``lifecycle_chain_fakes.py``; builders of the inputs: ``lifecycle_builders.py``).

:class:`FakeUnitOfWork` keeps the rules the SQL of ``adapters`` keeps: a transaction
rolls every change back when it raises; a deposit is found by identity, then by
where it was seen, then by content for records without identity; actions that spend
from the intent address start ``held`` while a deposit of the intent on their chain
is orphaned; a save is a compare-and-set on the intent's version; an overdue hold is
reported once; a watched deposit stays watched until settled (or watched anew).
:class:`FakeStore` classifies failures as the PostgreSQL store does.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import orjson
from tests.unit.lifecycle.lifecycle_due_fakes import DueState, DueWork

from intentd.adapters import db_failures
from intentd.contract.record import IntentRow
from intentd.domain.deposits import Deposit, DepositKey, Disposition, RecordedDeposit, Retraction
from intentd.domain.intent import ActionKind, Intent, PendingAction, RefundReason, SignerKind
from intentd.domain.valuation import Rate
from intentd.lifecycle.failures import Failure
from intentd.lifecycle.ports import ActionFacts


@dataclass
class StoredAction:
    id: int
    intent_id: int
    action: PendingAction
    deposit_id: int | None
    status: str
    """``ready``, ``held``, ``cancelled``, or whatever a test sets (``sent``...)."""


@dataclass
class _State:
    intents: dict[int, IntentRow] = field(default_factory=dict)
    deposits: dict[int, RecordedDeposit] = field(default_factory=dict)
    actions: dict[int, StoredAction] = field(default_factory=dict)
    outbox: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    event_log: list[tuple[int, UUID, dict[str, Any]]] = field(default_factory=list)
    applied: set[str] = field(default_factory=set)
    own: set[tuple[str, str]] = field(default_factory=set)
    watched: dict[DepositKey, bool] = field(default_factory=dict)
    """Deposits the trigger verifier watches: key -> reopened on the last call."""
    facts: dict[int, ActionFacts] = field(default_factory=dict)
    due: DueState = field(default_factory=DueState)


class FakeUnitOfWork(DueWork):
    """Every :class:`~intentd.lifecycle.ports.UnitOfWork` operation on in-memory state."""

    def __init__(self) -> None:
        self.state = _State()
        self.transactions = 0
        self.fail_next: Exception | None = None
        """Raised by the next :meth:`transaction` (a database error)."""

    # --- what tests arrange and read ----------------------------------------------------
    def add_intent(self, row: IntentRow) -> IntentRow:
        self.state.intents[row.id] = row
        return row

    def row(self, intent_id: int) -> IntentRow:
        return self.state.intents[intent_id]

    def recorded(self, key: DepositKey) -> RecordedDeposit:
        [found] = [d for d in self.state.deposits.values() if d.key == key]
        return found

    def actions_of(self, intent_id: int) -> list[StoredAction]:
        return [a for a in self.state.actions.values() if a.intent_id == intent_id]

    def events(self) -> list[dict[str, Any]]:
        return [payload for _, _, payload in self.state.outbox]

    def event_types(self) -> list[str]:
        return [str(event["type"]) for event in self.events()]

    # --- the port -----------------------------------------------------------------------
    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        self.transactions += 1
        saved = copy.deepcopy(self.state)
        try:
            yield
        except BaseException:
            self.state = saved
            raise

    async def intent_at(self, address: str) -> IntentRow | None:
        for row in self.state.intents.values():
            if row.intent_address == address.lower():
                return row
        return None

    async def lock_intent(self, intent_id: int) -> IntentRow | None:
        return self.state.intents.get(intent_id)

    async def intent(self, intent_id: int) -> IntentRow | None:
        return self.state.intents.get(intent_id)

    async def save_intent(self, intent: Intent, *, expected_version: int) -> None:
        row = self.state.intents[intent.id]
        if row.version != expected_version:
            raise RuntimeError(f"intent {intent.id} changed while it was being updated")
        self.state.intents[intent.id] = replace(
            row,
            received=intent.received,
            funding_status=intent.funding,
            status=intent.status,
            event_sequence=intent.event_sequence,
            tx_hash=intent.tx_hash,
            relayer=intent.relayer,
            needs_relay=bool(intent.relayer),
            refunded=intent.refunded,
            total_due=intent.terms.total_due,
            amount_out=intent.terms.amount_out,
            awaiting_price=intent.awaiting_price,
            valuation=intent.valuation if intent.valuation is not None else row.valuation,
            version=row.version + 1,
        )

    async def find_deposit(self, deposit: Deposit) -> RecordedDeposit | None:
        def rank(stored: RecordedDeposit) -> int | None:
            seen = stored.deposit
            if (seen.chain, seen.tx_hash, seen.token) != (
                deposit.chain,
                deposit.tx_hash,
                deposit.token,
            ):
                return None
            if seen.transfer_index is not None and seen.transfer_index == deposit.transfer_index:
                return 0
            if (seen.log_index, seen.block_hash) == (deposit.log_index, deposit.block_hash):
                return 1
            if (seen.transfer_index is None or deposit.transfer_index is None) and (
                seen.to_address,
                seen.amount,
            ) == (deposit.to_address, deposit.amount):
                return 2
            return None

        ranked = [
            (r, stored.id, stored)
            for stored in self.state.deposits.values()
            if (r := rank(stored)) is not None
        ]
        return min(ranked, key=lambda item: item[:2])[2] if ranked else None

    async def reconciled_in_block(self, intent_id: int, deposit: Deposit) -> list[RecordedDeposit]:
        return [
            stored
            for stored in sorted(self.state.deposits.values(), key=lambda d: d.id)
            if stored.intent_id == intent_id
            and (stored.deposit.chain, stored.deposit.block_hash, stored.deposit.to_address)
            == (deposit.chain, deposit.block_hash, deposit.to_address)
            and (stored.deposit.token, stored.deposit.from_address)
            == (deposit.token, deposit.from_address)
        ]

    async def find_published(self, retraction: Retraction) -> RecordedDeposit | None:
        for stored in sorted(self.state.deposits.values(), key=lambda d: d.id):
            seen = stored.deposit
            if (seen.chain, seen.tx_hash, seen.block_hash, seen.log_index) == (
                retraction.chain,
                retraction.tx_hash,
                retraction.block_hash,
                retraction.log_index,
            ):
                return stored
        return None

    async def record_deposit(
        self,
        deposit: Deposit,
        *,
        intent_id: int | None,
        disposition: Disposition,
        reason: RefundReason | None,
        revive: int | None = None,
        rate: Rate | None = None,
    ) -> int:
        if revive is not None:
            before = self.state.deposits[revive]
            if before.disposition is Disposition.RETRACTED:
                self.state.deposits[revive] = RecordedDeposit(
                    revive, replace(before.deposit, **_where(deposit)), intent_id, disposition,
                    reason, rate=rate,
                )  # fmt: skip
            return revive
        for stored in self.state.deposits.values():
            seen = stored.deposit
            same_log = (seen.chain, seen.tx_hash, seen.log_index) == (
                deposit.chain,
                deposit.tx_hash,
                deposit.log_index,
            )
            if same_log or (deposit.transfer_index is not None and seen.key == deposit.key):
                raise RuntimeError(f"deposit {deposit.key} exists")
        deposit_id = len(self.state.deposits) + 1
        self.state.deposits[deposit_id] = RecordedDeposit(
            deposit_id, deposit, intent_id, disposition, reason, rate=rate
        )
        return deposit_id

    async def record_valuation(self, intent_id: int, rate: Rate) -> int:
        found = [
            stored
            for stored in self.state.deposits.values()
            if stored.intent_id == intent_id
            and stored.disposition is Disposition.CREDITED
            and stored.rate is None
        ]
        for stored in found:
            self.state.deposits[stored.id] = replace(stored, rate=rate)
        return len(found)

    async def awaiting_price(self, *, limit: int) -> list[int]:
        found = [
            row.id
            for row in self.state.intents.values()
            if row.awaiting_price and row.status.value == "PENDING"
        ]
        return sorted(found)[:limit]

    async def relocate(self, recorded: RecordedDeposit, deposit: Deposit) -> None:
        stored = self.state.deposits[recorded.id]
        where = _where(deposit)
        if stored.deposit.transfer_index is not None:
            where["transfer_index"] = stored.deposit.transfer_index
        self.state.deposits[recorded.id] = replace(
            stored, deposit=replace(stored.deposit, **where), orphaned=False
        )

    async def mark_retracted(self, deposit_id: int) -> None:
        stored = self.state.deposits[deposit_id]
        self.state.deposits[deposit_id] = replace(
            stored, disposition=Disposition.RETRACTED, orphaned=False
        )

    async def is_own_transaction(self, chain: str, tx_hash: str) -> bool:
        return (chain, tx_hash) in self.state.own

    async def hold(self, deposit_id: int, intent_id: int, chain: str) -> int:
        stored = self.state.deposits[deposit_id]
        self.state.deposits[deposit_id] = replace(stored, orphaned=True)
        self.state.due.orphaned_at.setdefault(deposit_id, datetime.now(UTC))
        held = 0
        for action in self.actions_of(intent_id):
            spends = action.action.signer is SignerKind.INTENT and action.action.chain == chain
            if spends and action.status == "ready":
                action.status = "held"
                held += 1
        return held

    async def release(self, intent_id: int, chain: str) -> int:
        if self._orphaned(intent_id, chain):
            return 0
        released = 0
        for action in self.actions_of(intent_id):
            if action.action.chain == chain and action.status == "held":
                action.status = "ready"
                released += 1
        return released

    async def watch(self, key: DepositKey, *, reopen: bool) -> None:
        if reopen or key not in self.state.watched:
            self.state.watched[key] = reopen
            self.state.due.settled.pop(key, None)

    async def create_action(
        self,
        *,
        intent_id: int,
        action: PendingAction,
        address_index: int,
        deposit_id: int | None = None,
    ) -> int:
        held = action.signer is SignerKind.INTENT and self._orphaned(intent_id, action.chain)
        action_id = len(self.state.actions) + 1
        self.state.actions[action_id] = StoredAction(
            action_id, intent_id, action, deposit_id, "held" if held else "ready"
        )
        return action_id

    async def cancel_deposit_refund(self, deposit_id: int) -> bool:
        return self._cancel(
            lambda a: a.deposit_id == deposit_id and a.action.kind is ActionKind.USER_REFUND
        )

    async def cancel_prefill(self, intent_id: int, *, wait: bool = True) -> bool:
        return self._cancel(
            lambda a: a.intent_id == intent_id and a.action.kind is ActionKind.PREFILL
        )

    async def refund_reasons(self, intent_id: int) -> frozenset[RefundReason]:
        return frozenset(
            a.action.reason
            for a in self.actions_of(intent_id)
            if a.action.kind is ActionKind.USER_REFUND and a.action.reason is not None
        )

    async def mark_result_applied(self, result_id: str) -> bool:
        if result_id in self.state.applied:
            return False
        self.state.applied.add(result_id)
        return True

    async def action_reason(self, action_id: int) -> tuple[str | None, str, int] | None:
        found = self.state.actions.get(action_id)
        if found is None:
            return None
        action = found.action
        return (action.reason.value if action.reason else None, action.token, action.amount)

    async def action_age(self, action_id: int) -> float:
        return 0.0

    async def action_facts(self, action_id: int, tx_hash: str | None) -> ActionFacts | None:
        return self.state.facts.get(action_id)

    async def enqueue(self, *, topic: str, key: str, payload: bytes) -> None:
        self.state.outbox.append((topic, key, orjson.loads(payload)))

    async def record_event(
        self,
        *,
        intent_id: int,
        client_id: UUID,
        envelope: Mapping[str, Any],
        payload: bytes,
        created_at: datetime,
    ) -> None:
        self.state.event_log.append((intent_id, client_id, orjson.loads(payload)))

    # --- helpers ------------------------------------------------------------------------
    def _orphaned(self, intent_id: int, chain: str) -> bool:
        return any(
            d.orphaned and d.intent_id == intent_id and d.deposit.chain == chain
            for d in self.state.deposits.values()
        )

    def _cancel(self, which: Any) -> bool:
        ready = [a for a in self.state.actions.values() if which(a) and a.status == "ready"]
        for action in ready:
            action.status = "cancelled"
        return len(ready) == 1


def _where(deposit: Deposit) -> dict[str, Any]:
    return {
        "block_number": deposit.block_number,
        "block_hash": deposit.block_hash,
        "block_time": deposit.block_time,
        "log_index": deposit.log_index,
        "transfer_index": deposit.transfer_index,
        "amount": deposit.amount,
    }


class FakeStore:
    """Lends the one :class:`FakeUnitOfWork`; the next ``unanswered`` pings fail."""

    def __init__(self, uow: FakeUnitOfWork | None = None) -> None:
        self.uow = uow or FakeUnitOfWork()
        self.unanswered = 0
        self.pings = 0

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[FakeUnitOfWork]:
        yield self.uow

    async def ping(self) -> None:
        self.pings += 1
        if self.unanswered > 0:
            self.unanswered -= 1
            raise ConnectionError("the database does not answer")

    def classify(self, exc: BaseException) -> Failure:
        return db_failures.classify(exc)

    def age_orphans(self, by: timedelta) -> None:
        """Make every orphaned deposit orphaned ``by`` longer ago."""
        orphaned_at = self.uow.state.due.orphaned_at
        for deposit_id in orphaned_at:
            orphaned_at[deposit_id] -= by
