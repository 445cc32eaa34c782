"""The poller's view of an EVM chain over JSON-RPC (the client is ``adapters.json_rpc``).

:class:`EvmChainReader` is the poller's :class:`~intentd.indexer.ports.ChainReader`:
full blocks, ``Transfer`` logs of the chain's tokens with adaptive ``eth_getLogs``
ranges (a provider's range or size refusal splits the range in halves and the
narrower width is remembered, see ``indexer.planning.LogRangeSizer``), block hashes
for the reorg walk-back, and the receipts of the few transactions that carry native
value to a watched address (one batch). :func:`open_chain` builds a configured
chain's client and reader.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import structlog

from intentd.adapters.json_rpc import JsonRpcClient, RangeLimitError
from intentd.indexer.decoding import TRANSFER_TOPIC
from intentd.indexer.planning import BlockRange, LogRangeSizer
from intentd.indexer.ports import RawRange

if TYPE_CHECKING:
    from intentd.settings import ChainConfig

__all__ = ["EvmChainReader", "open_chain"]

log = structlog.get_logger()


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
        self._tokens = sorted({token.lower() for token in tokens})
        self.log_ranges = LogRangeSizer(max_log_range)

    async def latest_block(self) -> int:
        """The number of the head the chain's config trusts (``ChainConfig.head``)."""
        if self._head == "latest":
            return int(await self._client.call("eth_blockNumber", []), 16)
        block = await self._client.call("eth_getBlockByNumber", [self._head, False])
        return int(block["number"], 16)

    async def read_range(self, blocks: BlockRange) -> RawRange:
        calls = [("eth_getBlockByNumber", [hex(n), True]) for n in blocks]
        if not self._tokens:
            return RawRange(await self._client.batch(calls), [])
        full, logs = await asyncio.gather(self._client.batch(calls), self._transfer_logs(blocks))
        return RawRange(full, logs)

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

    async def _transfer_logs(self, blocks: BlockRange) -> list[dict[str, Any]]:
        logs: list[dict[str, Any]] = []
        first = blocks.first
        while first <= blocks.last:
            part = BlockRange(first, min(first + self.log_ranges.width - 1, blocks.last))
            query = {
                "fromBlock": hex(part.first),
                "toBlock": hex(part.last),
                "address": self._tokens,
                "topics": [TRANSFER_TOPIC],
            }
            try:
                found = await self._client.call("eth_getLogs", [query])
            except RangeLimitError as exc:
                if len(part) == 1:
                    raise
                self.log_ranges.refused(len(part))  # halves the width below this range
                log.info(
                    "eth_getLogs range refused; splitting",
                    chain=self._client.chain,
                    blocks=str(part),
                    width=self.log_ranges.width,
                    error=exc.message,
                )
                continue
            self.log_ranges.succeeded(len(part))
            logs.extend(found)
            first = part.last + 1
        return logs


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
