"""What the executor needs from the outside world, as small protocols.

The adapters implement them (``adapters.evm.chain_writer.EvmChainWriter`` the three
chain ports, ``adapters.postgres.execution_store.PostgresExecutionStore`` the store,
``adapters.postgres.executor_lease.ExecutorLease``, ``adapters.evm.signer.Keyring``,
``adapters.evm.l1_fee``); the unit tests use the fakes of
``tests/unit/execution/execution_fakes.py``.

The store is a unit of work: :class:`ExecutionStore` opens a :class:`StoreTransaction`,
whose repositories (``execution.repositories``) are its attributes.

The chain's nodes are three capability ports, one adapter behind them all:
:class:`NodeReader` (read state: heads, code, counts, receipts, balances),
:class:`FeeOracle` (the fee market and gas estimates; :class:`L1Fees` beside it) and
:class:`Broadcaster` (send transactions, and whether a node knows them).

Contracts the executor relies on:

- :class:`ExecutionStore`: every change happens in a :meth:`~ExecutionStore.transaction`
  that commits as a whole when the block ends and rolls back when it raises (the
  repositories' own contracts: ``execution.repositories``).
- The chain ports' reads may raise :class:`~intentd.chain.errors.ChainUnavailable`
  (the adapters' RPC errors; the loop retries the tick). :meth:`NodeReader.view` is
  one request answered by one node (a load balancer routes a request to one backend),
  so its answers can be checked against each other (``execution.evidence``);
  :meth:`NodeReader.nonce_use` answers only what one node's answer proves.
  :meth:`Broadcaster.send_raw`
  answers a node's refusal as a :class:`SendOutcome` and raises only when no node
  answered (:class:`~intentd.chain.errors.NoAnswer`).
- :class:`Lease`: :meth:`Lease.check` raises when this process may no longer lead the
  chain; the executor then stops at once.
- :class:`Keyring`: signs offline (nothing is broadcast by signing) and never shows a
  key; the executor sees addresses and signed bytes only.
- :meth:`NodeReader.balances` answers from one node in one request, with that node's
  head read first: the balances are at that block or newer (never older).
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
from typing import Protocol

from intentd.domain.actions import SignerKind
from intentd.execution.evidence import ChainView
from intentd.execution.float_figures import Balances
from intentd.execution.repositories import (
    ActionQueue,
    ChainTransactions,
    CreditedDeposits,
    Funds,
    Nonces,
    Results,
)
from intentd.execution.tracking import NonceUse
from intentd.execution.tx_plans import TxPlan

__all__ = [
    "Balances",
    "Broadcaster",
    "EstimateReverted",
    "ExecutionStore",
    "FeeInputs",
    "FeeOracle",
    "Keyring",
    "L1FeeUnavailable",
    "L1Fees",
    "Lease",
    "NodeReader",
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


class NodeReader(Protocol):
    """What the executor reads of one chain's nodes (read state): heads, code, counts,
    one node's view of our transactions, the proof of a nonce's use, balances. (The
    balance reconciliation's reads are ``chain.evm.ports.StateReader``.)"""

    async def head(self) -> int: ...

    @property
    def seen_head(self) -> int:
        """The highest head any of the chain's nodes answered this reader (0: none yet):
        a read pinned to it is answered only by a node at or past it."""
        ...

    async def has_code(self, address: str) -> bool:
        """Whether ``address`` holds code at :attr:`seen_head` (or newer), as a node at
        or past it answers (a node below it is asked again)."""
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

    async def balances(self, holdings: Sequence[tuple[str, str]]) -> Balances:
        """In one request to one node: its head, then the balance of each (holder, token)
        (``domain.actions.NATIVE``: the native coin)."""
        ...


class FeeOracle(Protocol):
    """What a transaction of one chain would cost: the fee market and the gas."""

    async def fee_inputs(self) -> FeeInputs: ...

    async def estimate_gas(self, sender: str, to: str, value: int, data: bytes) -> int:
        """Gas the call would use; raises :class:`EstimateReverted` if it would revert."""
        ...


class Broadcaster(Protocol):
    """Sends signed transactions to one chain's nodes (send transactions)."""

    async def send_raw(self, raw: bytes) -> tuple[SendOutcome, str]:
        """Broadcast signed bytes; the outcome and the node's message."""
        ...

    async def known(self, hashes: Sequence[str]) -> dict[str, bool]:
        """Whether the node knows each transaction (in its pool or in a block)."""
        ...


class StoreTransaction(Protocol):
    """The executor's rows of one chain, inside one database transaction."""

    @property
    def actions(self) -> ActionQueue: ...
    @property
    def transactions(self) -> ChainTransactions: ...
    @property
    def nonces(self) -> Nonces: ...
    @property
    def funds(self) -> Funds: ...
    @property
    def deposits(self) -> CreditedDeposits: ...
    @property
    def results(self) -> Results: ...


class ExecutionStore(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[StoreTransaction]:
        """A database transaction: committed when the block ends, rolled back if it raises."""
        ...


class Lease(Protocol):
    """The chain's leadership, held by the caller
    (``adapters.postgres.executor_lease.ExecutorLease``)."""

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
