"""The transfers to one intent address in a block range, read as narrowly as it allows.

- :func:`token_range` (an intent whose ``tokenIn`` is an ERC-20): ``Transfer`` logs of
  the chain's tokens filtered at the node by the intent's address as recipient
  (``adapters.intent_window_rpc``), then, for the few blocks holding one, every
  ``Transfer`` log of those tokens, decoded by the poller's code
  (``indexer.decoding.token_deposits``): the same deposits with the same identities
  as the poller's, a wrong-token deposit included. No block is read in full, so a
  range can be a week of blocks; native coin sent to a token intent is not looked
  for (the poller finds it where one runs).
- :func:`native_range` (an intent whose ``tokenIn`` is the native coin): the blocks in
  full, as the poller reads them, with the token logs read as above, decoded by the
  poller's ``indexer.range_deposits.scan_range``: native value counts only with a
  successful receipt, and the balance reconciliation finds the coin that arrived
  through a contract, over the same full blocks as the poller.

Every log answer is proven whole (``indexer.coverage``): asked with the answering
node's hash of ``blocks.last`` in the same POST, accepted only if it is the hash read
there, so a node that lags (and cuts ``eth_getLogs`` at its head) or follows another
fork is never read as "no transfer". Both read the range again when the answers do
not fit together, at most :data:`READ_ATTEMPTS` times, then raise
``InconsistentAnswer``; a node without the anchor block is no answer (retried by the
client, then ``ChainUnavailable``): the scan's progress does not move.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from intentd.adapters.chain import EvmChainReader, open_chain
from intentd.adapters.intent_window_rpc import IntentWindowReader
from intentd.adapters.json_rpc import JsonRpcClient
from intentd.indexer.balances import Reconciled
from intentd.indexer.coverage import LogsAnswer, proven_logs
from intentd.indexer.decoding import (
    BlockHeader,
    ChainTransfer,
    InconsistentAnswer,
    chain_order,
    decode_headers,
    token_deposits,
)
from intentd.indexer.planning import BlockRange
from intentd.indexer.ports import RawRange
from intentd.indexer.range_deposits import scan_range
from intentd.indexer.reconciliation import Reconciliation
from intentd.indexer.watched import WatchedAddresses
from intentd.settings import ChainConfig

__all__ = [
    "READ_ATTEMPTS",
    "ChainReads",
    "native_range",
    "open_reads",
    "token_deposits_of",
    "token_range",
]

READ_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class ChainReads:
    """One chain's RPC client and the readers over it; :meth:`close` closes the client."""

    client: JsonRpcClient
    reader: EvmChainReader
    """Full blocks, block hashes, receipts: the poller's reader."""
    window: IntentWindowReader

    async def close(self) -> None:
        await self.reader.close()


def open_reads(chain: ChainConfig) -> ChainReads:
    client, reader = open_chain(chain, attempts=READ_ATTEMPTS)
    tokens = [token.address for token in chain.tokens]
    return ChainReads(
        client, reader, IntentWindowReader(client, tokens, max_log_range=chain.max_log_range)
    )


def token_deposits_of(
    hits: Sequence[LogsAnswer],
    logs: Sequence[LogsAnswer],
    headers: Mapping[int, BlockHeader],
    blocks: BlockRange,
    *,
    tokens: Collection[str],
    watched: WatchedAddresses,
) -> list[ChainTransfer]:
    """The token deposits in ``blocks`` found by the recipient-filtered answers ``hits``,
    decoded from ``logs`` (every token ``Transfer`` log of each hit's block, one answer
    per block) with the blocks' ``headers`` (each hit's block and ``blocks.last``), in
    chain order. Every answer must be proven against the headers
    (``indexer.coverage.proven_logs``: the hits cover ``blocks``, their node's block
    ``blocks.last`` is the one read, each hit is in the block read at its height), else
    ``InconsistentAnswer``: read again."""
    hashes = {number: header.hash for number, header in headers.items()}
    found = proven_logs(hits, hashes, covering=blocks)
    numbers = sorted({int(hit["blockNumber"], 16) for hit in found})
    if [answer.blocks.first for answer in logs] != numbers:
        raise InconsistentAnswer(f"the logs of blocks {numbers} were not all read")
    ordered = proven_logs(logs, hashes)
    return sorted(token_deposits(ordered, headers, tokens, watched), key=chain_order)


async def token_range(
    reads: ChainReads, chain: ChainConfig, address: str, blocks: BlockRange
) -> tuple[list[ChainTransfer], str]:
    """Token deposits to ``address`` in ``blocks``, and the hash of ``blocks.last``."""
    tokens = frozenset(t.address.lower() for t in chain.tokens)
    watched = WatchedAddresses([address])
    for attempt in range(1, READ_ATTEMPTS + 1):
        hits = await reads.window.transfers_to(address, blocks)
        numbers = sorted({int(log["blockNumber"], 16) for a in hits for log in a.logs})
        logs, headers = await asyncio.gather(
            reads.window.token_logs(numbers, anchor=blocks.last),
            reads.window.headers(sorted({*numbers, blocks.last})),
        )
        try:
            return (
                token_deposits_of(hits, logs, headers, blocks, tokens=tokens, watched=watched),
                headers[blocks.last].hash,
            )
        except InconsistentAnswer:
            if attempt == READ_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


async def native_range(
    reads: ChainReads,
    chain: ChainConfig,
    address: str,
    blocks: BlockRange,
    *,
    reconciliation: Reconciliation,
    reconciled: Reconciled,
) -> tuple[list[ChainTransfer], str]:
    """Native and token deposits to ``address`` in ``blocks`` (read in full), and the
    hash of ``blocks.last``. The recipient-filtered answers must cover ``blocks`` and
    be proven against the full blocks, as must the token logs of their blocks."""
    tokens = frozenset(t.address.lower() for t in chain.tokens)
    calls = [("eth_getBlockByNumber", [hex(n), True]) for n in blocks]
    for attempt in range(1, READ_ATTEMPTS + 1):
        full, hits = await asyncio.gather(
            reads.client.batch(calls), reads.window.transfers_to(address, blocks)
        )
        numbers = sorted({int(log["blockNumber"], 16) for a in hits for log in a.logs})
        raw = RawRange(full, await reads.window.token_logs(numbers, anchor=blocks.last))
        try:
            read = decode_headers(full, blocks)
            proven_logs(hits, {h.number: h.hash for h in read}, covering=blocks if tokens else None)
            headers, found = await scan_range(
                chain.name,
                reads.reader,
                raw,
                blocks,
                tokens=tokens,
                watched=WatchedAddresses([address]),
                reconciliation=reconciliation,
                reconciled=[reconciled],
            )
            return found, headers[-1].hash
        except InconsistentAnswer:
            if attempt == READ_ATTEMPTS:
                raise
    raise AssertionError("unreachable")
