"""The capability ports of a chain that are the same for every family.

Each role asks for the capabilities it uses, not for a whole chain client: the
trigger verifier and the poller's reorg checks read heads and block hashes
(:class:`BlockReader`); the range reads, the state reads (balances, receipts, traces)
and their raw answers are the family's own (``chain.evm.ports``: ``RangeReader``,
``ChainReader``, ``StateReader``); sending transactions and the fee oracle are the
executor's (``execution.ports``). The adapters implement them
(``adapters.evm``); the unit tests use in-memory fakes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["BlockReader"]


class BlockReader(Protocol):
    """Heads and block identities: what reorg checks and finality need."""

    async def latest_block(self) -> int:
        """The node's newest block number."""
        ...

    async def block_hashes(self, numbers: Sequence[int]) -> dict[int, str | None]:
        """The node's current hash at each height (None where it has no block)."""
        ...
