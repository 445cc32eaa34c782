"""In-memory fakes of the lifecycle's ports: a unit of work over dictionaries, its store,
an inbox and a publisher; builders of intents, deposits, results and a chain book.

:class:`FakeUnitOfWork` keeps the rules the SQL of ``adapters`` keeps: a transaction
rolls every change back when it raises; a deposit is found by identity, then by
where it was seen, then by content for records without identity; actions that spend
from the intent address start ``held`` while a deposit of the intent on their chain
is orphaned; a save is a compare-and-set on the intent's version.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import orjson

from intentd.adapters.action_evidence import ActionFacts
from intentd.adapters.kafka import OutgoingMessage
from intentd.domain.action_results import ActionResult, ResultEvent
from intentd.domain.deposits import Deposit, DepositKey, Disposition, RecordedDeposit, Retraction
from intentd.domain.intent import ActionKind, Intent, PendingAction, RefundReason, SignerKind
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.intents.record import IntentRow
from intentd.lifecycle.chain_book import BookedChain, BookedToken, ChainBook

SOURCE, DESTINATION = "SRC", "DST"
USDC = "0x" + "a" * 40
USDT = "0x" + "b" * 40
ROGUE = "0x" + "c" * 40
RELAYER = "0x" + "1" * 40
FEE_ACCOUNT = "0x" + "2" * 40
REFUND_TO = "0x" + "3" * 40
RECIPIENT = "0x" + "4" * 40
PAYER = "0x" + "9" * 40
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
EXPIRES = NOW + timedelta(minutes=30)
TOPIC = "t.intent-events"


def address(n: int) -> str:
    return f"0x{n:040x}"


def tx(n: int) -> str:
    return f"0x{n:064x}"


def block(n: int, branch: int = 0) -> str:
    return f"0x{branch:032x}{n:032x}"


def book(*, fee_account: str = FEE_ACCOUNT, min_sweep: int = 0) -> ChainBook:
    """USDC (6 decimals) and USDT on both chains; ``min_sweep`` in base units."""
    tokens = {USDC: BookedToken(6, min_sweep), USDT: BookedToken(6, min_sweep)}
    return ChainBook(
        events_topic=TOPIC,
        chains={
            SOURCE: BookedChain(1, RELAYER, fee_account, tokens),
            DESTINATION: BookedChain(2, RELAYER, fee_account, tokens),
        },
    )


def intent_row(
    intent_id: int = 1,
    *,
    total_due: int = 1_000,
    fees: int = 10,
    status: IntentStatus = IntentStatus.PENDING,
    expires_at: datetime = EXPIRES,
) -> IntentRow:
    return IntentRow(
        id=intent_id, client_id=UUID(int=1), sender=None, initial_amount="0.001",
        amount_symbol="USDC", source_chain=SOURCE, destination_chain=DESTINATION,
        token_in=USDC, token_out=USDC, token_out_decimals=6, asset_token_symbol="USDC",
        asset_token_decimals=6, total_due=total_due, fees_in_asset=fees, app_fee_in_asset=0,
        amount_out=total_due - fees, fees_in_usd=Decimal(0), app_fee_in_usd=Decimal(0),
        total_in_usd=None, slippage=Decimal(0), address_index=intent_id,
        intent_address=address(0x1000 + intent_id), recipient=RECIPIENT,
        refund_address=REFUND_TO, relayer="", coordinator=address(0xC0), bridger=address(0xB0),
        bridge_extra_data="0x", status=status, funding_status=FundingStatus.NONE, received=0,
        tx_hash=None, needs_relay=False, event_sequence=0, version=0, metadata={},
        expires_at=expires_at, created_at=NOW - timedelta(minutes=1), updated_at=NOW,
    )  # fmt: skip


def deposit(
    to: str,
    amount: int,
    *,
    n: int = 1,
    token: str = USDC,
    chain: str = SOURCE,
    branch: int = 0,
    block_number: int | None = None,
    log_index: int | None = None,
    transfer_index: int | None = 0,
    block_time: datetime = NOW,
) -> Deposit:
    """Deposit number ``n`` (its transaction ``tx(n)``), seen on ``branch``."""
    number = n if block_number is None else block_number
    return Deposit(
        chain=chain, tx_hash=tx(n), log_index=n if log_index is None else log_index,
        block_number=number, block_hash=block(number, branch), block_time=block_time,
        token=token, from_address=PAYER, to_address=to, amount=amount,
        transfer_index=transfer_index,
    )  # fmt: skip


def retraction_of(seen: Deposit) -> Retraction:
    return Retraction(
        chain=seen.chain, tx_hash=seen.tx_hash, log_index=seen.log_index,
        block_number=seen.block_number, block_hash=seen.block_hash, to_address=seen.to_address,
        token=seen.token, transfer_index=seen.transfer_index,
    )  # fmt: skip


def result(
    action_id: int,
    intent_id: int,
    kind: ActionKind,
    event: ResultEvent,
    *,
    chain: str = DESTINATION,
    tx_hash: str | None = None,
    **figures: Any,
) -> ActionResult:
    return ActionResult(
        id=f"action:{action_id}:{event.value}", action_id=action_id, intent_id=intent_id,
        kind=kind, event=event, chain=chain,
        tx_hash=tx_hash if tx_hash is not None or event is ResultEvent.FAILED else tx(9000),
        **figures,
    )  # fmt: skip


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
    applied: set[str] = field(default_factory=set)
    own: set[tuple[str, str]] = field(default_factory=set)
    watched: dict[DepositKey, bool] = field(default_factory=dict)
    """Deposits the trigger verifier watches: key -> reopened on the last call."""
    facts: dict[int, ActionFacts] = field(default_factory=dict)


class FakeUnitOfWork:
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
    ) -> int:
        if revive is not None:
            before = self.state.deposits[revive]
            if before.disposition is Disposition.RETRACTED:
                self.state.deposits[revive] = RecordedDeposit(
                    revive, replace(before.deposit, **_where(deposit)), intent_id, disposition,
                    reason,
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
            deposit_id, deposit, intent_id, disposition, reason
        )
        return deposit_id

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

    async def cancel_prefill(self, intent_id: int) -> bool:
        return self._cancel(
            lambda a: a.intent_id == intent_id and a.action.kind is ActionKind.PREFILL
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


@dataclass
class Record:
    """What the consumer reads of a Kafka record."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class FakeInbox:
    """Hands out the batches given, one a call; once they are all out, sets ``stop``
    (the consumer finishes the batch in hand). Records what was committed."""

    def __init__(
        self, batches: Sequence[Mapping[Any, Sequence[Record]]], stop: asyncio.Event
    ) -> None:
        self._batches = list(batches)
        self._stop = stop
        self.committed: dict[Any, int] = {}

    async def getmany(self, *, timeout_ms: int) -> Mapping[Any, Sequence[Record]]:
        if not self._batches:
            self._stop.set()
            return {}
        batch = self._batches.pop(0)
        if not self._batches:
            self._stop.set()
        return batch

    async def commit(self, positions: Mapping[Any, int]) -> None:
        self.committed.update(positions)


class FakePublisher:
    def __init__(self) -> None:
        self.sent: list[OutgoingMessage] = []

    async def publish(self, message: OutgoingMessage) -> None:
        self.sent.append(message)
