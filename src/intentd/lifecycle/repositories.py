"""The repositories of the lifecycle's unit of work (implemented in ``adapters``).

A handler reaches the store through the attributes of its
:class:`~intentd.lifecycle.ports.UnitOfWork`, one repository per idea, each a few
methods that speak domain values (the row mapping lives in the adapter):

- :class:`Intents` (``uow.intents``): the intent records, loaded locked and saved
  with compare-and-set on their version; the PENDING ones due for expiry or awaiting
  a price.
- :class:`Deposits` (``uow.deposits``): the recorded deposits, found by identity or
  by where they were seen, recorded, moved, retracted.
- :class:`Actions` (``uow.actions``): the actions an intent decided, what the
  executor recorded of them, the results applied and our own transactions.
- :class:`Holds` (``uow.holds``): the reorg holds of an intent's spending actions.
- :class:`Watches` (``uow.watches``): the trigger-credited deposits the trigger
  verifier watches for reorgs.
- :class:`Outbox` (``uow.outbox``) and :class:`Events` (``uow.events``): the messages
  relayed after the commit, and the public event log.

Every method runs inside the caller's transaction; reads named ``lock``/``at`` take
the row lock that serialises the messages of one intent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from intentd.contract.record import IntentRow
from intentd.domain.actions import ActionKind, ActionStatus
from intentd.domain.deposits import Deposit, DepositKey, Disposition, RecordedDeposit, Retraction
from intentd.domain.intent import Intent, PendingAction, RefundReason
from intentd.domain.valuation import Rate

__all__ = [
    "ActionFacts",
    "Actions",
    "Deposits",
    "Events",
    "Holds",
    "Intents",
    "Outbox",
    "OverdueHold",
    "RefundAction",
    "Watches",
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
class RefundAction:
    """What an action refunds: its reason (None: not a user refund), token and amount."""

    reason: RefundReason | None
    token: str
    amount: int


@dataclass(frozen=True, slots=True)
class OverdueHold:
    """A deposit orphaned by a reorg for longer than the bound (not alerted before)."""

    deposit_id: int
    intent_id: int
    chain: str
    tx_hash: str
    orphaned_at: datetime


class Intents(Protocol):
    async def at(self, address: str) -> IntentRow | None:
        """The intent at ``address`` (any case), locked."""
        ...

    async def lock(self, intent_id: int) -> IntentRow | None:
        """The intent, locked."""
        ...

    async def get(self, intent_id: int) -> IntentRow | None:
        """The intent as stored now (after this unit's writes)."""
        ...

    async def save(self, intent: Intent, *, expected_version: int) -> None:
        """Compare-and-set on the row version; raises if it changed meanwhile."""
        ...

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


class Deposits(Protocol):
    async def find(self, deposit: Deposit) -> RecordedDeposit | None:
        """The recorded deposit that is the same transfer, on any fork (locked)."""
        ...

    async def find_published(self, retraction: Retraction) -> RecordedDeposit | None:
        """The deposit recorded from the block and log ``retraction`` names (locked)."""
        ...

    async def reconciled_in_block(self, intent_id: int, deposit: Deposit) -> list[RecordedDeposit]:
        """The reconciled deposits (native, no sender) recorded for the intent in
        ``deposit``'s block (same chain, block hash and recipient), any disposition."""
        ...

    async def record(
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


class Actions(Protocol):
    async def create(
        self,
        *,
        intent_id: int,
        action: PendingAction,
        address_index: int,
        deposit_id: int | None = None,
    ) -> int:
        """Record an action for the executor of its chain; its id."""
        ...

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

    async def refund(self, action_id: int) -> RefundAction | None:
        """What the action refunds; None if it does not exist."""
        ...

    async def age(self, action_id: int) -> float:
        """Seconds since the action was written (0 if it does not exist)."""
        ...

    async def facts(self, action_id: int, tx_hash: str | None) -> ActionFacts | None:
        """What the executor recorded about the action (to check a result against)."""
        ...

    async def mark_result_applied(self, result_id: str) -> bool:
        """Remember an applied action result; False if it was applied before."""
        ...

    async def is_own_transaction(self, chain: str, tx_hash: str) -> bool:
        """Whether one of our signers sent ``tx_hash``."""
        ...


class Holds(Protocol):
    async def hold(self, deposit_id: int, intent_id: int, chain: str) -> int:
        """Mark the deposit orphaned, hold the intent's ready spending actions on
        ``chain``; how many were held."""
        ...

    async def release(self, intent_id: int, chain: str) -> int:
        """Put held actions back to ready unless a deposit there is still orphaned."""
        ...

    async def overdue(self, *, before: datetime) -> list[OverdueHold]:
        """Deposits orphaned since before ``before`` and not alerted yet; marks them
        alerted."""
        ...


class Watches(Protocol):
    async def watch(self, key: DepositKey, *, reopen: bool) -> None:
        """Have the trigger verifier watch the recorded deposit ``key`` for reorgs."""
        ...

    async def watched(self, chain: str, *, limit: int) -> list[RecordedDeposit]:
        """The deposits of ``chain`` the trigger verifier still watches, oldest first."""
        ...

    async def settle(self, deposit_id: int, outcome: str) -> None:
        """Stop watching the deposit; ``outcome`` says why."""
        ...

    async def rewind_scan(self, intent_id: int, block_number: int) -> None:
        """Have trigger-processing scan the intent's window again from ``block_number``."""
        ...


class Outbox(Protocol):
    async def add(self, *, topic: str, key: str, payload: bytes) -> None:
        """Add a message to the outbox; relayed once the transaction commits."""
        ...


class Events(Protocol):
    async def record(
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

    async def prune(self, *, older_than_days: int, limit: int) -> int:
        """Delete up to ``limit`` public events older than ``older_than_days``, oldest
        first, skipping those another pruner holds; how many were deleted."""
        ...
