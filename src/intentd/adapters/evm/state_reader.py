"""Balances and receipts over JSON-RPC, for the balance reconciliation
(:class:`~intentd.chain.evm.ports.StateReader`).

Balances are read at a block hash (EIP-1898 ``{"blockHash": ...}``), never at a tag
such as ``latest``, so they belong to the blocks the caller decoded, whichever node of
a provider answers each POST; a node that does not have that block answers with an
error, which the client retries and then raises.

:func:`open_chain_state` gives the poller a client of its own for these reads, whose
POSTs carry up to the chain's ``rpc_batch_limit`` calls: with 10^4 open native-coin
intents a batch's balance reads are 10^4 calls, 100 POSTs at the default limit of 100
(10 at geth's 1000), where the poller's client for full blocks would send 200 of 50.

Traces (``debug_traceBlockByHash``, for the identity of reconciled deposits) are read
the same way, except that a provider without that method answers None for every block:
the deposits keep their block identity (one error log per process naming
``chains.<NAME>.reconciled_identity``; ``intentd_reconciliation_total{finding="untraced"}``
counts them; the method is not asked again for 10 minutes). Polling goes on: a
provider that cannot trace must not stop deposits being found.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from intentd.adapters.evm.json_rpc import JsonRpcClient, RpcError
from intentd.chain.evm.reconciled_ids import TRACER
from intentd.settings import ChainConfig

__all__ = ["EvmChainState", "open_chain_state"]

log = structlog.get_logger()
_NO_METHOD = frozenset({-32601, -32604})
"""JSON-RPC "method not found", and "method not supported" as some providers answer."""
_ASK_AGAIN_AFTER = 600.0
"""Seconds before a provider that refused the method is asked for traces again."""
_UNSUPPORTED = re.compile(
    r"method .*(not (found|supported|available|exist))|unsupported method", re.I
)


class EvmChainState:
    """:class:`~intentd.chain.evm.ports.StateReader` through a :class:`JsonRpcClient`.

    Does not own the client: closing it is its creator's business.
    """

    def __init__(self, client: JsonRpcClient) -> None:
        self._client = client
        self._untraced_until = 0.0
        """Until when (monotonic) traces are not asked: the provider refused the method."""

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

    async def traces(self, block_hashes: Sequence[str]) -> list[Sequence[Any] | None]:
        if time.monotonic() < self._untraced_until:
            return [None for _ in block_hashes]
        calls = [("debug_traceBlockByHash", [block_hash, TRACER]) for block_hash in block_hashes]
        try:
            traces: list[Sequence[Any] | None] = await self._client.batch(calls)
        except RpcError as exc:
            if exc.code not in _NO_METHOD and not _UNSUPPORTED.search(exc.message):
                raise
            refusal = str(exc)
        else:
            return traces
        if self._untraced_until == 0.0:
            log.error(
                "the provider does not trace blocks (debug_traceBlockByHash): reconciled"
                " deposits are identified by their blocks (a reorg that moves one"
                " retracts it); use a provider that traces, or set"
                f' chains.{self._client.chain}.reconciled_identity = "block"',
                error=refusal,
            )
        self._untraced_until = time.monotonic() + _ASK_AGAIN_AFTER
        return [None for _ in block_hashes]


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
