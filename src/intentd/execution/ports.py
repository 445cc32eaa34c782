"""What the executor needs from the outside world, as small protocols.

The adapters implement them (``adapters.evm.chain_writer.EvmChainWriter``,
``adapters.execution_store.PostgresExecutionStore``, ``adapters.executor_lease.ExecutorLease``,
``adapters.evm.signer.Keyring``);
the unit tests use the fakes of ``tests/unit/execution/execution_fakes.py``.

Contracts the executor relies on:

- :class:`ExecutionStore`: every change happens in a :meth:`~ExecutionStore.transaction`
  that commits as a whole when the block ends and rolls back when it raises. Status
  changes are compare-and-set (they answer whether they made the change); a nonce
  handed out by :meth:`StoreTransaction.allocate_nonce` is never handed out again once
  its transaction commits.
- :class:`ChainWriter`: reads may raise :class:`~intentd.chain.errors.ChainUnavailable`
  (the adapters' RPC errors; the loop retries the tick). :meth:`ChainWriter.view` is
  one request answered by one node (a load balancer routes a request to one backend),
  so its answers can be checked against each other (``execution.evidence``);
  :meth:`ChainWriter.nonce_use` answers only what one node's answer proves.
  :meth:`ChainWriter.send_raw`
  answers a node's refusal as a :class:`SendOutcome` and raises only when no node
  answered (:class:`~intentd.chain.errors.NoAnswer`).
- :class:`Lease`: :meth:`Lease.check` raises when this process may no longer lead the
  chain; the executor then stops at once.
- :class:`Keyring`: signs offline (nothing is broadcast by signing) and never shows a
  key; the executor sees addresses and signed bytes only.
- :meth:`ChainWriter.balances` answers from one node in one request, with that node's
  head read first: the balances are at that block or newer (never older).
- :meth:`StoreTransaction.relayer_commitments` serialises the prefill checks of a chain
  (a lock held to the end of the caller's transaction), so two executors that both think
  they lead never count the same coin for two prefills.
- :class:`L1Fees`: answers a bound of the L1 data fee an OP-stack chain charges on top
  of gas, or raises :class:`L1FeeUnavailable` when the chain gives none (nothing may be
  signed then: fail closed); a node that does not answer raises
  :class:`~intentd.chain.errors.ChainUnavailable` (the tick is retried).
  ``adapters.evm.l1_fee`` implements it.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from intentd.domain.actions import Action, ActionStatus, SignerKind
from intentd.execution.deposit_check import Credited
from intentd.execution.evidence import ChainView
from intentd.execution.float_figures import Balances, Commitments, Exposure, FloatRow
from intentd.execution.gas import Fees
from intentd.execution.tracking import OPEN_STATUSES, NonceUse, Receipt, Tx, TxStatus
from intentd.execution.tx_plans import Purpose, TxPlan
from intentd.messages import ActionResultMessage

__all__ = [
    "Balances",
    "ChainWriter",
    "Commitments",
    "EstimateReverted",
    "ExecutionStore",
    "Exposure",
    "FeeInputs",
    "FloatRow",
    "Keyring",
    "L1FeeUnavailable",
    "L1Fees",
    "Lease",
    "NewTx",
    "SendOutcome",
    "SignedTx",
    "StoreTransaction",
]


class EstimateReverted(Exception):
    """The node says the call would revert (e.g. the sender lacks the tokens)."""


class L1FeeUnavailable(Exception):
    """The chain's GasPriceOracle gave no L1 fee bound; do not sign the transaction."""


@dataclass(frozen=True, slots=True)
class FeeInputs:
    head: int
    base_fee: int
    tip: int


class SendOutcome(enum.Enum):
    ACCEPTED = "accepted"
    KNOWN = "known"
    """The node already has it (in its pool)."""
    NONCE_TOO_LOW = "nonce_too_low"
    """The nonce is used: by this transaction (mined), a sibling, or someone else."""
    UNDERPRICED = "underpriced"
    INSUFFICIENT_FUNDS = "insufficient_funds"
    REJECTED = "rejected"


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


class ChainWriter(Protocol):
    """What the executor asks of one chain's nodes."""

    async def head(self) -> int: ...
    async def fee_inputs(self) -> FeeInputs: ...
    async def has_code(self, address: str) -> bool: ...

    async def estimate_gas(self, sender: str, to: str, value: int, data: bytes) -> int:
        """Gas the call would use; raises :class:`EstimateReverted` if it would revert."""
        ...

    async def nonces(self, signers: Sequence[str], block: str) -> dict[str, int]:
        """Transaction counts at ``block`` (``latest``, ``pending`` or a hex number)."""
        ...

    @property
    def view_size(self) -> int:
        """The most calls one :meth:`view` carries: the head, a count per signer, a
        receipt per hash (the provider's batch limit)."""
        ...

    async def view(self, signers: Sequence[str], hashes: Sequence[str], block: int) -> ChainView:
        """In one request to one node: its head, the signers' transaction counts at
        ``block`` and each hash's receipt (None: not in a block that node shows)."""
        ...

    async def nonce_use(
        self, signer: str, nonce: int, through: int, ours: Sequence[str]
    ) -> NonceUse | None:
        """The transaction that used ``signer``'s ``nonce`` in a block at or below
        ``through`` (where the signer's count is past it), with its receipt if it is one
        of ``ours``: found by counts at block numbers (``execution.evidence.NonceSearch``)
        and proven by one node's answer about that block
        (``execution.evidence.prove_use``); None when nothing proves it."""
        ...

    async def known(self, hashes: Sequence[str]) -> dict[str, bool]:
        """Whether the node knows each transaction (in its pool or in a block)."""
        ...

    async def send_raw(self, raw: bytes) -> tuple[SendOutcome, str]:
        """Broadcast signed bytes; the outcome and the node's message."""
        ...

    async def balances(self, holdings: Sequence[tuple[str, str]]) -> Balances:
        """In one request to one node: its head, then the balance of each (holder, token)
        (``domain.actions.NATIVE``: the native coin)."""
        ...


class StoreTransaction(Protocol):
    """The executor's rows of one chain, inside one database transaction."""

    # --- actions ---------------------------------------------------------------------
    async def claim_ready(self) -> Action | None:
        """Lock the first due ready action (skipping those locked by others)."""
        ...

    async def lock_action(self, action_id: int, status: ActionStatus) -> Action | None:
        """Lock the action if it is still in ``status``."""
        ...

    async def lock_action_row(self, action_id: int) -> None:
        """Lock the action whatever its status (serialises its ``sent`` result)."""
        ...

    async def submitted_actions(self) -> list[tuple[Action, list[Tx]]]:
        """The actions in flight, each with its transactions, oldest first."""
        ...

    async def action_age(self, action_id: int) -> float:
        """Seconds since the action was created."""
        ...

    async def set_action_status(
        self, action_id: int, old: ActionStatus, new: ActionStatus
    ) -> bool: ...

    async def postpone(self, action_id: int, *, delay: float, error: str) -> None:
        """Leave a ready action for later without counting an attempt."""
        ...

    async def retry_action(
        self, action_id: int, *, attempts: int, delay: float, error: str | None
    ) -> bool:
        """Back to ready after a failed attempt, due in ``delay`` seconds."""
        ...

    async def fail_action(self, action_id: int, *, attempts: int, error: str) -> bool: ...

    async def confirm_action(
        self, action_id: int, *, tx_hash: str, amount_sent: int, gas_cost: int
    ) -> bool: ...

    async def gas_credit(self, action: Action, address: str) -> int | None:
        """The gas tank's coin at the intent address (see ``docs/execution.md``); None
        while another ERC-20 action of the address is in flight."""
        ...

    async def intent_source(self, intent_id: int) -> tuple[str, str] | None:
        """(source chain, ``tokenIn``) of the intent."""
        ...

    async def credited_deposits(self, intent_id: int, chain: str) -> list[Credited]:
        """The intent's credited deposits on ``chain``, in id order."""
        ...

    # --- the relayer's float (docs/execution.md, "The relayer's float") -----------------
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

    # --- transactions and nonces -------------------------------------------------------
    async def history(self, action_id: int) -> list[Tx]:
        """Every transaction of the action, oldest first."""
        ...

    async def record_transaction(self, tx: NewTx) -> int:
        """Insert a signed transaction (``signed``); its id."""
        ...

    async def set_tx_status(
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

    async def reconcile_nonce(self, signer: str, pending: int) -> int:
        """Raise the stored next nonce to the chain's pending count and past every
        recorded nonce; return it."""
        ...

    async def open_nonce_holes(self, signer: str, mined: int) -> int:
        """Nonces from ``mined`` below the next one with no open transaction of ours."""
        ...

    async def allocate_nonce(self, signer: str) -> int:
        """The signer's next nonce, taken under its row lock."""
        ...

    # --- results ---------------------------------------------------------------------
    async def enqueue_result(self, result: ActionResultMessage) -> None:
        """Put an action result in the outbox (committed with this transaction)."""
        ...


class ExecutionStore(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[StoreTransaction]:
        """A database transaction: committed when the block ends, rolled back if it raises."""
        ...


class Lease(Protocol):
    """The chain's leadership, held by the caller (``adapters.executor_lease.ExecutorLease``)."""

    async def listen(self, wakeup: asyncio.Event) -> None:
        """Set ``wakeup`` whenever an action of the chain becomes ready."""
        ...

    async def check(self) -> None:
        """Raise unless this process still leads the chain."""
        ...


@dataclass(frozen=True, slots=True, repr=False)
class SignedTx:
    raw: bytes
    tx_hash: str
    """Lowercase 0x-hex keccak of ``raw``."""

    def __repr__(self) -> str:
        return f"SignedTx({self.tx_hash})"


class Keyring(Protocol):
    """The keys one executor signs with (``adapters.evm.signer.Keyring``)."""

    def address(self, kind: SignerKind, index: int | None = None) -> str:
        """Lowercase address of a signer (``index``: an intent signer's HD index)."""
        ...

    def sign(
        self, plan: TxPlan, kind: SignerKind, index: int | None, *, chain_id: int, nonce: int
    ) -> SignedTx:
        """``plan`` signed by that signer as an EIP-1559 (type 2) transaction."""
        ...


class L1Fees(Protocol):
    """The L1 data fee one chain charges on top of gas (0 where it charges none)."""

    async def upper_bound(self, plan: TxPlan) -> int:
        """Wei the chain will charge on top of gas for ``plan``, at most (today's L1 prices)."""
        ...
