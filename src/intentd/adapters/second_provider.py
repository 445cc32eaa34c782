"""A chain's second provider over JSON-RPC, for the executor's deposit check
(``execution.deposit_verifier.SecondProvider``).

Each URL of ``verify_rpc_urls`` is checked to answer the configured ``eth_chainId``;
errors are the RPC errors of ``adapters.chain`` (``indexer.ports.ChainUnavailable``).
"""

from __future__ import annotations

from typing import Any

from intentd.adapters.json_rpc import JsonRpcClient
from intentd.settings import ChainConfig

__all__ = ["RpcSecondProvider"]


class RpcSecondProvider:
    """The ``SecondProvider`` of ``chain`` over JSON-RPC (``eth_chainId`` checked per URL)."""

    def __init__(self, chain: ChainConfig) -> None:
        self._rpc = JsonRpcClient(
            chain.name,
            chain.verify_rpc_urls,
            timeout=chain.rpc_timeout,
            attempts=2,
            chain_id=chain.chain_id,
        )

    async def head(self, tag: str) -> int:
        block = await self._rpc.call("eth_getBlockByNumber", [tag, False])
        return int(block["number"], 16)

    async def block_hash(self, number: int) -> str | None:
        block = await self._rpc.call("eth_getBlockByNumber", [hex(number), False], allow_null=True)
        return None if block is None else str(block["hash"]).lower()

    async def parent_hash(self, block_hash: str) -> str | None:
        block = await self._rpc.call("eth_getBlockByHash", [block_hash, False], allow_null=True)
        return None if block is None else str(block["parentHash"]).lower()

    async def receipt(self, tx_hash: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = await self._rpc.call(
            "eth_getTransactionReceipt", [tx_hash], allow_null=True
        )
        return found

    async def transaction(self, tx_hash: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = await self._rpc.call(
            "eth_getTransactionByHash", [tx_hash], allow_null=True
        )
        return found

    async def balance(self, address: str, block_hash: str) -> int:
        return int(await self._rpc.call("eth_getBalance", [address, {"blockHash": block_hash}]), 16)

    async def close(self) -> None:
        await self._rpc.close()
