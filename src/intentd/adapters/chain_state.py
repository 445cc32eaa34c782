"""Balances and receipts over JSON-RPC, for the balance reconciliation
(:class:`~intentd.indexer.reconciliation.ChainState`).

Balances are read at a block hash (EIP-1898 ``{"blockHash": ...}``), so they belong to
the blocks the caller decoded; a node that no longer has that block answers with an
error, which the client retries and then raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from intentd.adapters.json_rpc import JsonRpcClient

__all__ = ["EvmChainState"]


class EvmChainState:
    """:class:`~intentd.indexer.reconciliation.ChainState` through a :class:`JsonRpcClient`.

    Does not own the client: closing it is its creator's business.
    """

    def __init__(self, client: JsonRpcClient) -> None:
        self._client = client

    async def balances(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        calls = [
            ("eth_getBalance", [address, {"blockHash": block_hash}])
            for address, block_hash in queries
        ]
        return [int(answer, 16) for answer in await self._client.batch(calls)]

    async def receipts(self, tx_hashes: Sequence[str]) -> list[Mapping[str, Any]]:
        calls = [("eth_getTransactionReceipt", [tx_hash]) for tx_hash in tx_hashes]
        receipts: list[Mapping[str, Any]] = await self._client.batch(calls)
        return receipts
