"""Balances and receipts over JSON-RPC, for the balance reconciliation
(:class:`~intentd.indexer.reconciliation.ChainState`).

Balances are read at a block hash (EIP-1898 ``{"blockHash": ...}``), never at a tag
such as ``latest``, so they belong to the blocks the caller decoded, whichever node of
a provider answers each POST; a node that does not have that block answers with an
error, which the client retries and then raises.

:func:`open_chain_state` gives the poller a client of its own for these reads, whose
POSTs carry up to the chain's ``rpc_batch_limit`` calls: with 10^4 open native-coin
intents a batch's balance reads are 10^4 calls, 100 POSTs at the default limit of 100
(10 at geth's 1000), where the poller's client for full blocks would send 200 of 50.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from intentd.adapters.json_rpc import JsonRpcClient
from intentd.settings import ChainConfig

__all__ = ["EvmChainState", "open_chain_state"]


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


def open_chain_state(config: ChainConfig) -> tuple[JsonRpcClient, EvmChainState]:
    """A client of the chain's ``rpc_urls`` (its ``eth_chainId`` checked) whose POSTs carry
    up to ``rpc_batch_limit`` calls, and the state reads over it; the caller closes the
    client."""
    client = JsonRpcClient(
        config.name,
        config.rpc_urls,
        timeout=config.rpc_timeout,
        max_calls=config.rpc_batch_limit,
        chain_id=config.chain_id,
    )
    return client, EvmChainState(client)
