"""The poller's view of an EVM chain over JSON-RPC (the client is ``adapters.evm.json_rpc``).

:class:`EvmChainReader` is the poller's :class:`~intentd.chain.evm.ports.ChainReader`:
full blocks, ``Transfer`` logs of the chain's tokens (``adapters.evm.log_reads``: each
answer anchored at the range's last block, so ``chain.evm.range_deposits.scan_range``
can prove it whole; adaptive ranges; a one-block refusal read from the block's
receipts), block hashes for the reorg walk-back, and the receipts of the few
transactions that carry native value to a watched address (one batch).
:func:`open_chain` builds a configured chain's client and reader.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.adapters.evm.log_reads import LogReader
from intentd.chain.blocks import BlockRange
from intentd.chain.evm.log_ranges import LogRangeSizer
from intentd.chain.evm.ports import RawRange

if TYPE_CHECKING:
    from intentd.settings import ChainConfig

__all__ = ["EvmChainReader", "open_chain"]


class EvmChainReader:
    """The poller's view of one EVM chain through a :class:`JsonRpcClient`."""

    def __init__(
        self,
        client: JsonRpcClient,
        tokens: Sequence[str],
        *,
        max_log_range: int,
        head: str = "latest",
    ) -> None:
        self._client = client
        self._head = head
        self._any_token = bool(tokens)
        self._logs = LogReader(client, tokens, max_log_range=max_log_range)

    @property
    def log_ranges(self) -> LogRangeSizer:
        """The adaptive ``eth_getLogs`` width."""
        return self._logs.log_ranges

    async def latest_block(self) -> int:
        """The number of the head the chain's config trusts (``ChainConfig.head``)."""
        if self._head == "latest":
            return int(await self._client.call("eth_blockNumber", []), 16)
        block = await self._client.call("eth_getBlockByNumber", [self._head, False])
        return int(block["number"], 16)

    async def read_range(self, blocks: BlockRange) -> RawRange:
        calls = [("eth_getBlockByNumber", [hex(n), True]) for n in blocks]
        if not self._any_token:
            return RawRange(await self._client.batch(calls), [])
        full, answers = await asyncio.gather(
            self._client.batch(calls), self._logs.read([blocks], anchor=blocks.last)
        )
        return RawRange(full, answers)

    async def block_hashes(self, numbers: Sequence[int]) -> dict[int, str | None]:
        calls = [("eth_getBlockByNumber", [hex(n), False]) for n in numbers]
        blocks = await self._client.batch(calls, allow_null=True)
        return {
            n: (block["hash"].lower() if block is not None else None)
            for n, block in zip(numbers, blocks, strict=True)
        }

    async def receipts(self, tx_hashes: Sequence[str]) -> dict[str, dict[str, Any]]:
        calls = [("eth_getTransactionReceipt", [tx_hash]) for tx_hash in tx_hashes]
        found = await self._client.batch(calls)
        return {tx_hash.lower(): receipt for tx_hash, receipt in zip(tx_hashes, found, strict=True)}

    async def close(self) -> None:
        await self._client.close()


def open_chain(
    config: ChainConfig, *, attempts: int = 8, max_calls: int = 50
) -> tuple[JsonRpcClient, EvmChainReader]:
    """The RPC client of one configured chain (every URL's ``eth_chainId`` checked, see
    :class:`JsonRpcClient`) and a reader over it that counts from the chain's trusted
    head; the caller closes the reader (which closes the client)."""
    client = JsonRpcClient(
        config.name,
        config.rpc_urls,
        timeout=config.rpc_timeout,
        attempts=attempts,
        max_calls=max_calls,
        chain_id=config.chain_id,
    )
    reader = EvmChainReader(
        client,
        [token.address for token in config.tokens],
        max_log_range=config.max_log_range,
        head=config.head,
    )
    return client, reader
