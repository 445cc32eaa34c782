"""A chain's second provider over JSON-RPC, for the executor's deposit check
(``execution.deposit_verifier.SecondProvider``).

Each URL of ``verify_rpc_urls`` is checked to answer the configured ``eth_chainId``;
errors are the RPC errors of ``adapters.evm.chain_reader`` (``chain.errors.ChainUnavailable``).
The head and the block at a height are asked in one POST (``JsonRpcClient.together``):
one node answers both, so a load balancer cannot pair one node's head with another's
block. Balances are read at block hashes; a node without that block answers an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from intentd.adapters.evm.json_rpc import JsonRpcClient, MissingResult
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

    async def view(self, tag: str, number: int, *, full: bool) -> tuple[int, dict[str, Any] | None]:
        head, block = await self._rpc.together(
            [("eth_getBlockByNumber", [tag, False]), ("eth_getBlockByNumber", [hex(number), full])],
            allow_null=True,
        )
        if head is None:
            raise MissingResult(f"eth_getBlockByNumber[{tag!r}] answered null")
        found: dict[str, Any] | None = block
        return int(head["number"], 16), found

    async def receipts(self, tx_hashes: Sequence[str]) -> list[dict[str, Any] | None]:
        calls = [("eth_getTransactionReceipt", [tx_hash]) for tx_hash in tx_hashes]
        found: list[dict[str, Any] | None] = await self._rpc.batch(calls, allow_null=True)
        return found

    async def balances(self, address: str, block_hashes: Sequence[str]) -> list[int]:
        calls = [("eth_getBalance", [address, {"blockHash": h}]) for h in block_hashes]
        return [int(answer, 16) for answer in await self._rpc.batch(calls)]

    async def close(self) -> None:
        await self._rpc.close()
