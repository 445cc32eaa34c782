"""Trigger-processing's view of the chains' nodes (JSON-RPC): ``scanning.ports.ScanChains``.

One client per chain, opened on first use with a few attempts per read
(``scanning.window.READ_ATTEMPTS``), carrying the poller's reader
(:class:`~intentd.adapters.evm.chain_reader.EvmChainReader`: full ranges, block hashes, receipts),
the recipient-filtered window reads (:class:`~intentd.adapters.evm.window_logs.IntentWindowReader`),
full blocks, point reads (``adapters.evm.chain_lookup``) and the balance reconciliation's
state (``adapters.evm.state_reader``), all on that one client: its own connections, apart
from the other roles'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from intentd.adapters.evm import chain_lookup
from intentd.adapters.evm.chain_reader import EvmChainReader, open_chain
from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.adapters.evm.state_reader import EvmChainState
from intentd.adapters.evm.window_logs import IntentWindowReader
from intentd.chain.blocks import BlockRange
from intentd.chain.evm.ports import RawRange
from intentd.scanning.window import READ_ATTEMPTS
from intentd.settings import ChainConfig

__all__ = ["EvmScanChain", "EvmScanChains"]


class EvmScanChain:
    """One chain's client and the readers over it; :meth:`close` closes the client."""

    def __init__(
        self, client: JsonRpcClient, reader: EvmChainReader, window: IntentWindowReader
    ) -> None:
        self._client = client
        self._reader = reader
        self._window = window

    @classmethod
    def open(cls, config: ChainConfig) -> EvmScanChain:
        client, reader = open_chain(config, attempts=READ_ATTEMPTS)
        tokens = [token.address for token in config.tokens]
        window = IntentWindowReader(client, tokens, max_log_range=config.max_log_range)
        return cls(client, reader, window)

    @property
    def window(self) -> IntentWindowReader:
        return self._window

    async def latest_block(self) -> int:
        return await self._reader.latest_block()

    async def read_range(self, blocks: BlockRange) -> RawRange:
        return await self._reader.read_range(blocks)

    async def block_hashes(self, numbers: Sequence[int]) -> dict[int, str | None]:
        return await self._reader.block_hashes(numbers)

    async def receipts(self, tx_hashes: Sequence[str]) -> dict[str, dict[str, Any]]:
        return await self._reader.receipts(tx_hashes)

    async def full_blocks(self, blocks: BlockRange) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = await self._client.batch(
            [("eth_getBlockByNumber", [hex(n), True]) for n in blocks]
        )
        return found

    async def block_timestamp(self, number: int) -> int:
        return await chain_lookup.block_timestamp(self._client, number)

    async def balance(self, token: str, holder: str, block: int) -> int:
        return await chain_lookup.balance(self._client, token, holder, block)

    def state(self) -> EvmChainState:
        return EvmChainState(self._client)

    async def close(self) -> None:
        await self._reader.close()


class EvmScanChains:
    def __init__(self) -> None:
        self._open: dict[str, EvmScanChain] = {}

    def chain(self, config: ChainConfig) -> EvmScanChain:
        found = self._open.get(config.name)
        if found is None:
            found = self._open[config.name] = EvmScanChain.open(config)
        return found

    async def close(self) -> None:
        for chain in self._open.values():
            await chain.close()
        self._open.clear()
