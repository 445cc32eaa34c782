"""A fake of the trigger verifier's chains port: nodes over the indexer's forkable
:class:`~tests.unit.chain.chain_fakes.FakeChain`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.unit.chain.chain_fakes import FakeChain, FakeReader, ForwardingChain, ForwardingState

from intentd.chain.blocks import BlockRange
from intentd.chain.evm.ports import RawRange
from intentd.settings import ChainConfig


class ReadFailed(Exception):
    """A node's failed answer (what ``VerifierChains.failed_read`` recognises)."""


class FakeDepositChain(FakeReader):
    """A node of :class:`FakeChain`; every read raises ``fail`` while it is set. A node
    that lags in its indexes: ``receipts_lag`` (no receipt for any transaction: its
    receipt index trails its blocks), ``logs_cut`` (``eth_getLogs`` answers nothing, as
    a node whose log index stops below the range)."""

    def __init__(self, chain: FakeChain, tokens: Iterable[str]) -> None:
        super().__init__(chain, tokens)
        self.fail: Exception | None = None
        self.failed = 0
        """Reads that raised ``fail``."""
        self.receipts_lag = False
        self.logs_cut = False

    async def latest_block(self) -> int:
        self._failing()
        return await super().latest_block()

    async def read_range(self, blocks: BlockRange) -> RawRange:
        self._failing()
        raw = await super().read_range(blocks)
        return RawRange(raw.blocks, []) if self.logs_cut else raw

    async def receipt_at(self, tx_hash: str, number: int) -> tuple[str | None, Any]:
        """The node's hash at ``number`` and the receipt of ``tx_hash``."""
        self._failing()
        seen = self.chain.blocks[number]["hash"] if number <= self.chain.head else None
        return seen, await self.receipt(tx_hash)

    async def receipt(self, tx_hash: str) -> dict[str, Any] | None:
        """The receipt of ``tx_hash`` if its block is on the current branch."""
        self._failing()
        found = self.chain.receipts.get(tx_hash)
        if found is None or self.receipts_lag:
            return None
        number = int(found["blockNumber"], 16)
        on_branch = (
            number <= self.chain.head and self.chain.blocks[number]["hash"] == (found["blockHash"])
        )
        return found if on_branch else None

    def state(self) -> ForwardingState:
        assert isinstance(self.chain, ForwardingChain), "balances need a ForwardingChain"
        return ForwardingState(self.chain)

    def _failing(self) -> None:
        if self.fail is not None:
            self.failed += 1
            raise self.fail


class FakeChains:
    def __init__(self, **nodes: FakeDepositChain) -> None:
        self.nodes = nodes
        self.closed = False

    def reader(self, chain: ChainConfig) -> FakeDepositChain:
        return self.nodes[chain.name]

    def failed_read(self, exc: BaseException) -> bool:
        return isinstance(exc, ReadFailed)

    async def close(self) -> None:
        self.closed = True
