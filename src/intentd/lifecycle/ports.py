"""What the lifecycle needs of the world, as small protocols (implemented in ``adapters``).

- :class:`UnitOfWork`: one connection's worth of the store, the intents, deposits,
  actions and outbox a handler reads and writes; everything a handler does inside
  :meth:`UnitOfWork.transaction` commits together or not at all. Reads named
  ``lock``/``locked`` take the row lock that serialises the messages of one intent.
- :class:`Store`: hands out units of work, says whether the database answers and
  what a failure of it means (:class:`~intentd.lifecycle.failures.Failure`).
- :class:`Inbox`: the consumed topics (a Kafka consumer with auto-commit off).
- :class:`LogProgress`: how far the lifecycle group applied them (the expiry waits).
- :class:`Publisher`: where dead letters go (awaited and acknowledged).
- :class:`VerifierChains`: the chains' nodes, as the trigger verifier reads them.
- :class:`Rates`: the prices a revalued intent's payment is valued at.

The values they speak (:class:`ActionFacts`, :class:`OverdueHold`,
:class:`InboxRecord`) are defined here, below the adapters; a message it publishes
itself (a dead letter) is :class:`intentd.messages.OutgoingMessage`.

Fakes of all of them live in ``tests/unit/lifecycle/`` (``lifecycle_fakes.py`` and
its neighbours).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from intentd.chain.evm.ports import ChainReader, StateReader
from intentd.contract.record import IntentRow
from intentd.domain.actions import ActionKind, ActionStatus
from intentd.domain.deposits import Deposit, DepositKey, Disposition, RecordedDeposit, Retraction
from intentd.domain.intent import Intent, PendingAction, RefundReason
from intentd.domain.valuation import Rate
from intentd.lifecycle.failures import Failure
from intentd.messages import OutgoingMessage
from intentd.settings import ChainConfig

__all__ = [
    "ActionFacts",
    "DepositChain",
    "Inbox",
    "InboxRecord",
    "LogPositions",
    "OutgoingMessage",
    "OverdueHold",
    "Publisher",
    "Rates",
    "Store",
    "UnitOfWork",
    "VerifierChains",
]


@dataclass(frozen=True, slots=True)
class ActionFacts:
    """What the executor recorded about an action (to check a result against)."""

    intent_id: int
    kind: ActionKind
    chain: str
    status: ActionStatus
    tx_hash: str | None
    """The confirmed transfer's hash (set when the action is confirmed)."""
    amount_sent: int | None
    gas_cost: int | None
    transfer_sent: bool
    """Whether a transfer transaction with the result's hash was recorded and sent."""


@dataclass(frozen=True, slots=True)
class OverdueHold:
    """A deposit orphaned by a reorg for longer than the bound (not alerted before)."""

    deposit_id: int
    intent_id: int
    chain: str
    tx_hash: str
    orphaned_at: datetime


class UnitOfWork(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[Any]:
        """A transaction (a savepoint inside one already open)."""
        ...

    # --- intents --------------------------------------------------------------------
    async def intent_at(self, address: str) -> IntentRow | None:
        """The intent at ``address`` (any case), locked."""
        ...

    async def lock_intent(self, intent_id: int) -> IntentRow | None: ...

    async def intent(self, intent_id: int) -> IntentRow | None:
        """The intent as stored now (after this unit's writes)."""
        ...

    async def save_intent(self, intent: Intent, *, expected_version: int) -> None:
        """Compare-and-set on the row version; raises if it changed meanwhile."""
        ...

    # --- deposits -------------------------------------------------------------------
    async def find_deposit(self, deposit: Deposit) -> RecordedDeposit | None:
        """The recorded deposit that is the same transfer, on any fork (locked)."""
        ...

    async def find_published(self, retraction: Retraction) -> RecordedDeposit | None:
        """The deposit recorded from the block and log ``retraction`` names (locked)."""
        ...

    async def reconciled_in_block(self, intent_id: int, deposit: Deposit) -> list[RecordedDeposit]:
        """The reconciled deposits (native, no sender) recorded for the intent in
        ``deposit``'s block (same chain, block hash and recipient), any disposition."""
        ...

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
        """Record the deposit (or revive the retracted record ``revive``) with the prices
        its credit was valued at (``rate``); its id."""
        ...

    async def record_valuation(self, intent_id: int, rate: Rate) -> int:
        """Record ``rate`` with the intent's credited deposits recorded without one (credited
        while no price could be trusted, valued now); how many."""
        ...

    async def relocate(self, recorded: RecordedDeposit, deposit: Deposit) -> None:
        """The recorded transfer is now where ``deposit`` was seen; no longer orphaned."""
        ...

    async def mark_retracted(self, deposit_id: int) -> None: ...

    async def is_own_transaction(self, chain: str, tx_hash: str) -> bool:
        """Whether one of our signers sent ``tx_hash``."""
        ...

    async def hold(self, deposit_id: int, intent_id: int, chain: str) -> int:
        """Mark the deposit orphaned, hold the intent's ready spending actions on
        ``chain``; how many were held."""
        ...

    async def release(self, intent_id: int, chain: str) -> int:
        """Put held actions back to ready unless a deposit there is still orphaned."""
        ...

    async def watch(self, key: DepositKey, *, reopen: bool) -> None:
        """Have the trigger verifier watch the recorded deposit ``key`` for reorgs."""
        ...

    # --- actions --------------------------------------------------------------------
    async def create_action(
        self,
        *,
        intent_id: int,
        action: PendingAction,
        address_index: int,
        deposit_id: int | None = None,
    ) -> int: ...

    async def cancel_deposit_refund(self, deposit_id: int) -> bool:
        """Cancel a deposit's refund before any transaction; False if one was recorded."""
        ...

    async def cancel_prefill(self, intent_id: int, *, wait: bool = True) -> bool:
        """Withdraw an intent's prefill while it is ``ready`` (no transaction of it can
        still be mined); False otherwise. With ``wait=False``, a prefill the executor
        is taking right now (its row locked) counts as taken: False at once."""
        ...

    async def refund_reasons(self, intent_id: int) -> frozenset[RefundReason]:
        """The reasons of the user refunds the intent decided (any action status)."""
        ...

    async def mark_result_applied(self, result_id: str) -> bool:
        """Remember an applied action result; False if it was applied before."""
        ...

    async def action_reason(self, action_id: int) -> tuple[str | None, str, int] | None:
        """(reason, token, amount) of an action."""
        ...

    async def action_age(self, action_id: int) -> float:
        """Seconds since the action was written (0 if it does not exist)."""
        ...

    async def action_facts(self, action_id: int, tx_hash: str | None) -> ActionFacts | None:
        """What the executor recorded about the action (to check a result against)."""
        ...

    # --- due work: expiry, reorg holds, trigger-credited deposits ----------------------
    async def due_for_expiry(self, now: datetime, *, limit: int, skip: Sequence[int]) -> list[int]:
        """Ids of PENDING intents past ``expires_at`` at ``now``, but those in ``skip``."""
        ...

    async def next_expiry(self) -> datetime | None:
        """The earliest ``expires_at`` among PENDING intents."""
        ...

    async def awaiting_price(self, *, limit: int) -> list[int]:
        """Ids of PENDING intents that await a price (``Intent.awaiting_price``), lowest
        first."""
        ...

    async def prune_events(self, *, older_than_days: int, limit: int) -> int:
        """Delete up to ``limit`` public events older than ``older_than_days``, oldest
        first, skipping those another pruner holds; how many were deleted."""
        ...

    async def overdue_holds(self, *, before: datetime) -> list[OverdueHold]:
        """Deposits orphaned since before ``before`` and not alerted yet; marks them
        alerted."""
        ...

    async def watched_deposits(self, chain: str, *, limit: int) -> list[RecordedDeposit]:
        """The deposits of ``chain`` the trigger verifier still watches, oldest first."""
        ...

    async def settle_watch(self, deposit_id: int, outcome: str) -> None:
        """Stop watching the deposit; ``outcome`` says why."""
        ...

    async def rewind_scan(self, intent_id: int, block_number: int) -> None:
        """Have trigger-processing scan the intent's window again from ``block_number``."""
        ...

    # --- outbox ---------------------------------------------------------------------
    async def enqueue(self, *, topic: str, key: str, payload: bytes) -> None:
        """Add a message to the outbox; relayed once the transaction commits."""
        ...

    async def record_event(
        self,
        *,
        intent_id: int,
        client_id: UUID,
        envelope: Mapping[str, Any],
        payload: bytes,
        created_at: datetime,
    ) -> None:
        """Add a public event to the event log (``GET /api/v1/events``), in this transaction."""
        ...


class Rates(Protocol):
    """The prices a revalued intent's payment is valued at now
    (:class:`~intentd.lifecycle.valuation.Valuer`; a cache read, never I/O)."""

    def rate(self, row: IntentRow) -> Rate | None:
        """None: ``row`` is not revalued, or a price it needs cannot be trusted now."""
        ...


class Store(Protocol):
    def unit(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A unit of work on a connection of its own, for as long as the context lasts."""
        ...

    async def ping(self) -> None:
        """Return if the database answers; raise otherwise."""
        ...

    def classify(self, exc: BaseException) -> Failure:
        """What an exception raised while working on this store means."""
        ...


class InboxRecord(Protocol):
    """What the consumer reads of a consumed record."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


class Inbox(Protocol):
    """The consumed topics (a Kafka group consumer with auto-commit off)."""

    async def getmany(self, *, timeout_ms: int) -> Mapping[Any, Sequence[InboxRecord]]: ...

    async def commit(self, positions: Mapping[Any, int]) -> object:
        """Commit the next offset to read per partition (a commit lost to a rebalance
        is no error: the new owner replays the tail)."""
        ...


class LogProgress(Protocol):
    """How far the lifecycle's group (every replica) has applied its topics."""

    async def ends(self) -> Mapping[tuple[str, int], int] | None:
        """The end offset of every partition of the topics now; None if a topic's
        partitions are not known yet."""
        ...

    async def applied(self, ends: Mapping[tuple[str, int], int]) -> bool:
        """Whether the group's committed position reached ``ends`` in every partition."""
        ...


class Publisher(Protocol):
    async def publish(self, message: OutgoingMessage) -> None:
        """Send one message and wait for its acknowledgement."""
        ...


class LogPositions(Protocol):
    """What the lifecycle keeps of its place in the deposits logs, and the sources a gap
    in them is recovered from (``lifecycle.gap_recovery``)."""

    async def record_applied_block(self, topic: str, partition: int, block_number: int) -> None:
        """Remember the block of the last chain message applied from ``topic:partition``."""
        ...

    async def applied_block(self, topic: str, partition: int) -> int | None: ...

    async def poller_cursor(self, chain: str) -> int | None:
        """The last block the chain's poller published; None before its first."""
        ...

    async def intent_addresses(self) -> list[str]: ...

    async def recorded_deposits(self, chain: str, first: int, last: int) -> list[DepositKey]:
        """The deposits of ``chain`` in blocks ``first..last`` recorded for an intent and
        not retracted."""
        ...

    async def replay_outbox(self, topic: str) -> int:
        """Mark every kept outbox row of ``topic`` unpublished; return how many."""
        ...


class DepositChain(ChainReader, Protocol):
    """One chain's node, as the trigger verifier reads it."""

    async def receipt_at(self, tx_hash: str, number: int) -> tuple[str | None, Any]:
        """The node's hash of block ``number`` (None if it has no such block) and the
        transaction's receipt (None if it has none), both answered by one node (one
        request): "no receipt" is evidence only from a node that has the block."""
        ...

    def state(self) -> StateReader:
        """The node's balances, receipts and traces, for the balance reconciliation."""
        ...


class VerifierChains(Protocol):
    """The nodes of the configured chains (opened on first use, until :meth:`close`)."""

    def reader(self, chain: ChainConfig) -> DepositChain: ...

    def failed_read(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a failed or contradictory answer of a node (nothing to
        decide on this round), rather than a bug."""
        ...

    async def close(self) -> None: ...
