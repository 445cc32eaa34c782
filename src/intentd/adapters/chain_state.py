"""Balances and receipts over JSON-RPC, for the balance reconciliation
(:class:`~intentd.indexer.reconciliation.ChainState`).

Balances are read at a block hash (EIP-1898 ``{"blockHash": ...}``), so they belong to
the blocks the caller decoded; a node that no longer has that block answers with an
error, which the client retries and then raises. Traces
(``debug_traceBlockByHash``, for the identity of reconciled deposits) likewise; a
provider without that method fails the read with an error log naming
``chains.<NAME>.reconciled_identity``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from intentd.adapters.json_rpc import JsonRpcClient, RpcError
from intentd.indexer.reconciled_ids import TRACER

__all__ = ["EvmChainState"]

log = structlog.get_logger()
_NO_METHOD = -32601


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

    async def traces(self, block_hashes: Sequence[str]) -> list[Sequence[Any]]:
        calls = [("debug_traceBlockByHash", [block_hash, TRACER]) for block_hash in block_hashes]
        try:
            traces: list[Sequence[Any]] = await self._client.batch(calls)
        except RpcError as exc:
            if exc.code == _NO_METHOD:
                _no_traces(self._client.chain, exc)
            raise
        return traces


def _no_traces(chain: str, exc: RpcError) -> None:
    log.error(
        "the provider does not trace blocks (debug_traceBlockByHash): a reconciled deposit"
        " cannot be identified by its transaction; use a provider that does, or set"
        f' chains.{chain}.reconciled_identity = "block"',
        error=str(exc),
    )
