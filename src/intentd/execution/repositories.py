"""The repositories of the executor's store transaction, as small protocols.

A :class:`~intentd.execution.ports.StoreTransaction` is one database transaction of
one chain; its repositories are attributes (``work.actions``, ``work.transactions``,
``work.nonces``, ``work.funds``, ``work.deposits``, ``work.results``), each a few
methods that take and answer domain values (the rows are mapped inside the adapter,
``adapters.postgres.execution_store`` and ``adapters.postgres.transaction_rows``); the unit
tests use the fakes of ``tests/unit/execution/execution_store_fake.py``.

Contracts the executor relies on:

- Status changes are compare-and-set (they answer whether they made the change); a
  nonce handed out by :meth:`Nonces.allocate` is never handed out again once its
  transaction commits.
- :meth:`Funds.relayer_commitments` serialises the prefill checks of a chain (a lock
  held to the end of the caller's transaction), so two executors that both think they
  lead never count the same coin for two prefills.
- :meth:`Results.add` puts a result in the outbox, committed with the status change it
  reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from intentd.domain.actions import Action, ActionStatus
from intentd.execution.deposit_check import Credited
from intentd.execution.float_figures import Commitments, Exposure, FloatRow
from intentd.execution.gas import Fees
from intentd.execution.tracking import OPEN_STATUSES, Receipt, Tx, TxStatus
from intentd.execution.tx_plans import Purpose
from intentd.messages import ActionResultMessage

__all__ = [
    "ActionQueue",
    "ChainTransactions",
    "CreditedDeposits",
    "Funds",
    "NewTx",
    "Nonces",
    "Results",
]


@dataclass(frozen=True, slots=True)
class NewTx:
    """A signed transaction to record (status ``signed``) before it is broadcast."""

    action_id: int
    purpose: Purpose
    chain: str
    signer: str
    nonce: int
    tx_hash: str
    raw: bytes
    to: str
    value: int
    gas_limit: int
    fees: Fees


class ActionQueue(Protocol):
    """The chain's actions as the executor's queue of work (``work.actions``)."""

    async def claim_ready(self) -> Action | None:
        """Lock the first due ready action (skipping those locked by others)."""
        ...

    async def lock(self, action_id: int, status: ActionStatus) -> Action | None:
        """Lock the action if it is still in ``status``."""
        ...

    async def lock_row(self, action_id: int) -> None:
        """Lock the action whatever its status (serialises its ``sent`` result)."""
        ...

    async def submitted(self) -> list[tuple[Action, list[Tx]]]:
        """The actions in flight, each with its transactions, oldest first."""
        ...

    async def age(self, action_id: int) -> float:
        """Seconds since the action was created."""
        ...

    async def set_status(self, action_id: int, old: ActionStatus, new: ActionStatus) -> bool: ...

    async def postpone(self, action_id: int, *, delay: float, error: str) -> None:
        """Leave a ready action for later without counting an attempt."""
        ...

    async def retry(
        self, action_id: int, *, attempts: int, delay: float, error: str | None
    ) -> bool:
        """Back to ready after a failed attempt, due in ``delay`` seconds."""
        ...

    async def fail(self, action_id: int, *, attempts: int, error: str) -> bool: ...

    async def confirm(
        self, action_id: int, *, tx_hash: str, amount_sent: int, gas_cost: int
    ) -> bool: ...


class ChainTransactions(Protocol):
    """The actions' chain transactions (``work.transactions``)."""

    async def history(self, action_id: int) -> list[Tx]:
        """Every transaction of the action, oldest first."""
        ...

    async def record(self, tx: NewTx) -> int:
        """Insert a signed transaction (``signed``); its id."""
        ...

    async def set_status(
        self,
        tx_id: int,
        new: TxStatus,
        *,
        old: frozenset[TxStatus] = OPEN_STATUSES,
        receipt: Receipt | None = None,
    ) -> bool: ...

    async def mark_sent(self, tx_id: int) -> bool:
        """``signed`` → ``sent``; True if this call made the change."""
        ...

    async def first_transfer_sent(self, action_id: int) -> bool:
        """Whether a transfer of the action was already marked sent."""
        ...

    async def touch(self, tx_id: int) -> None:
        """Restart the stuck clock of a transaction."""
        ...


class Nonces(Protocol):
    """The signers' next nonces on the chain (``work.nonces``)."""

    async def reconcile(self, signer: str, pending: int) -> int:
        """Raise the stored next nonce to the chain's pending count and past every
        recorded nonce; return it."""
        ...

    async def open_holes(self, signer: str, mined: int) -> int:
        """Nonces from ``mined`` below the next one with no open transaction of ours."""
        ...

    async def allocate(self, signer: str) -> int:
        """The signer's next nonce, taken under its row lock."""
        ...


class Funds(Protocol):
    """The coin the executor pays from: the gas tank's credit at intent addresses and
    the relayer's float (``work.funds``; docs/execution.md, "The relayer's float")."""

    async def gas_credit(self, action: Action, address: str) -> int | None:
        """The gas tank's coin at the intent address (see ``docs/execution.md``); None
        while another ERC-20 action of the address is in flight."""
        ...

    async def relayer_commitments(self, relayer: str) -> Commitments:
        """The relayer's prefills in flight on the chain, under a lock held until this
        transaction ends (prefill checks of the chain run one at a time)."""
        ...

    async def exposure(self, relayer: str, *, overdue_after: float) -> Exposure:
        """Reserved, owed and pending per token on the chain, in one snapshot."""
        ...

    async def save_float(self, rows: Sequence[FloatRow], *, as_of: datetime) -> None:
        """Store the chain's float rows, unless newer ones are stored already."""
        ...


class CreditedDeposits(Protocol):
    """What the deposit verifier reads of an intent (``work.deposits``)."""

    async def intent_source(self, intent_id: int) -> tuple[str, str] | None:
        """(source chain, ``tokenIn``) of the intent."""
        ...

    async def credited(self, intent_id: int, chain: str) -> list[Credited]:
        """The intent's credited deposits on ``chain``, in id order."""
        ...


class Results(Protocol):
    """The action results' outbox (``work.results``)."""

    async def add(self, result: ActionResultMessage) -> None:
        """Put an action result in the outbox (committed with this transaction)."""
        ...
