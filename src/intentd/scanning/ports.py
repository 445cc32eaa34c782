"""What the ranged scans need from the outside world, as small protocols.

The adapters implement them (``adapters.evm.scan_chains.EvmScanChains`` for the chain,
``adapters.postgres.trigger_store.PostgresTriggerStore`` for trigger-processing's bookkeeping);
the unit tests use in-memory fakes. The lifecycle's ports serve the rest: crediting
goes through a :class:`~intentd.lifecycle.ports.UnitOfWork`, the verifier and the gap
recovery read through :class:`~intentd.lifecycle.ports.VerifierChains`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from intentd.chain.blocks import BlockHeader, BlockRange
from intentd.chain.evm.coverage import LogsAnswer
from intentd.chain.evm.ports import ChainReader, StateReader
from intentd.contract.record import IntentRow
from intentd.domain.deposits import RecordedDeposit
from intentd.lifecycle.ports import UnitOfWork
from intentd.settings import ChainConfig

__all__ = [
    "IntentWindow",
    "ScanChain",
    "ScanChains",
    "ScanProgress",
    "TriggerSession",
    "TriggerStore",
]


@dataclass(frozen=True, slots=True)
class ScanProgress:
    first_block: int
    scanned_to: int
    """Last block scanned; ``first_block - 1`` before the first scan."""
    scanned_hash: str | None = None
    """Hash of block ``scanned_to`` when it was scanned (None if not known)."""


class IntentWindow(Protocol):
    """Reads filtered at the node by one recipient: no block read in full."""

    async def transfers_to(self, recipient: str, blocks: BlockRange) -> list[LogsAnswer]:
        """The chain's tokens' ``Transfer`` logs to ``recipient`` over ``blocks``, each
        answer anchored at ``blocks.last`` (``chain.evm.coverage``)."""
        ...

    async def token_logs(self, numbers: Sequence[int], *, anchor: int) -> list[LogsAnswer]:
        """Every token ``Transfer`` log of each block of ``numbers``, one answer per block."""
        ...

    async def headers(self, numbers: Sequence[int]) -> dict[int, BlockHeader]:
        """The headers of the blocks ``numbers``."""
        ...


class ScanChain(ChainReader, Protocol):
    """One chain as trigger-processing reads it: the poller's reader, the window's
    filtered reads, full blocks, and point reads of state."""

    @property
    def window(self) -> IntentWindow: ...

    async def full_blocks(self, blocks: BlockRange) -> list[dict[str, Any]]:
        """Every block of ``blocks`` with its transactions, in height order."""
        ...

    async def block_timestamp(self, number: int) -> int: ...

    async def balance(self, token: str, holder: str, block: int) -> int:
        """``holder``'s balance of ``token`` (the native coin for ``NATIVE_TOKEN``)."""
        ...

    def state(self) -> StateReader:
        """Balances and traces for the balance reconciliation, on the same node."""
        ...


class ScanChains(Protocol):
    def chain(self, config: ChainConfig) -> ScanChain:
        """The chain's reads (opened on first use, kept until :meth:`close`)."""
        ...

    async def close(self) -> None: ...


class TriggerSession(Protocol):
    """Trigger-processing's bookkeeping on one database connection."""

    @property
    def uow(self) -> UnitOfWork:
        """A unit of work on the same connection (crediting)."""
        ...

    async def intent(self, intent_id: int) -> IntentRow | None: ...

    async def deposits_of(self, intent_id: int) -> list[RecordedDeposit]: ...

    async def progress(self, intent_id: int) -> ScanProgress | None: ...

    async def start(self, intent_id: int, chain: str, first_block: int) -> ScanProgress:
        """Record where the intent's window starts (the first caller wins a race)."""
        ...

    async def advance(self, intent_id: int, scanned_to: int, scanned_hash: str) -> None: ...

    async def rewind(self, intent_id: int, block_number: int) -> ScanProgress | None:
        """Scan again from ``block_number`` (a reorg); the progress after it."""
        ...


class TriggerStore(Protocol):
    def session(self) -> AbstractAsyncContextManager[TriggerSession]: ...
