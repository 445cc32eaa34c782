"""The EVM family's reading ports: a range's raw answers, receipts, state at a block.

``adapters.evm.chain_reader.EvmChainReader`` implements :class:`ChainReader` (the
poller's reader), ``adapters.evm.state_reader`` :class:`StateReader` (the balance
reconciliation's); the unit tests use in-memory fakes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from intentd.chain.blocks import BlockRange
from intentd.chain.evm.coverage import LogsAnswer
from intentd.chain.ports import BlockReader

__all__ = ["ChainReader", "RangeReader", "RawRange", "StateReader"]


@dataclass(frozen=True, slots=True)
class RawRange:
    """A block range as the node answered it (decoded JSON, not yet interpreted)."""

    blocks: list[dict[str, Any]]
    """``eth_getBlockByNumber(n, true)`` for each block of the range, in height order."""
    answers: list[LogsAnswer]
    """``Transfer`` logs of the chain's configured tokens over the range, as answered,
    each with its proof (``chain.evm.coverage``); none when the chain lists no token."""

    @property
    def logs(self) -> list[dict[str, Any]]:
        """The logs of every answer, in order (not yet proven)."""
        return [log for answer in self.answers for log in answer.logs]


class RangeReader(Protocol):
    """Blocks, logs and receipts of a range: what deposits are decoded from."""

    async def read_range(self, blocks: BlockRange) -> RawRange:
        """Full blocks and token ``Transfer`` logs of ``blocks``; every block present, the
        log answers covering ``blocks`` in order, each anchored at ``blocks.last``.

        Raises if any block or log query fails after the reader's retries; the answers'
        proof is checked by the caller (``chain.evm.range_deposits.scan_range``).
        """
        ...

    async def receipts(self, tx_hashes: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The receipts of ``tx_hashes`` (one batch), by lowercase transaction hash.

        Raises if any is missing after the reader's retries.
        """
        ...


class ChainReader(BlockReader, RangeReader, Protocol):
    """The poller's reader: heads, block hashes, ranges and receipts."""


class StateReader(Protocol):
    """State at a block, for the balance reconciliation (``chain.evm.reconciliation``)."""

    async def balances(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        """Native balance of each (address, block hash), in order."""
        ...

    async def receipts(self, tx_hashes: Sequence[str]) -> list[Mapping[str, Any]]:
        """The receipt of each transaction, in order."""
        ...

    async def traces(self, block_hashes: Sequence[str]) -> list[Sequence[Any] | None]:
        """The node's trace of each block (``reconciled_ids.TRACER``), in order; None for
        each when the provider does not trace (the deposits keep their block identity)."""
        ...
