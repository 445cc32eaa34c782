"""The transfers to one intent address in a block range, read as narrowly as it allows.

- :func:`token_range` (an intent whose ``tokenIn`` is an ERC-20): ``Transfer`` logs of
  the chain's tokens filtered at the node by the intent's address as recipient
  (``adapters.intent_window``), then, for the few blocks holding one, every
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

Both read the range again when the node's answers do not fit together (two forks),
at most :data:`READ_ATTEMPTS` times, then raise ``InconsistentAnswer``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intentd.adapters.chain import EvmChainReader, open_chain
from intentd.adapters.intent_window import IntentWindowReader
from intentd.adapters.json_rpc import JsonRpcClient
from intentd.indexer.balances import Reconciled
from intentd.indexer.decoding import (
    BlockHeader,
    ChainTransfer,
    InconsistentAnswer,
    chain_order,
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
    hits: Sequence[Mapping[str, Any]],
    logs: Mapping[int, Sequence[Mapping[str, Any]]],
    headers: Mapping[int, BlockHeader],
    tokens: Collection[str],
    watched: WatchedAddresses,
) -> list[ChainTransfer]:
    """The token deposits found by the recipient-filtered logs ``hits``, decoded from
    ``logs`` (every token ``Transfer`` log of each hit's block, by block) with the blocks'
    ``headers``, in chain order. Raises ``InconsistentAnswer`` if a hit is not in the
    block whose header was read (another fork)."""
    for hit in hits:
        number = int(hit["blockNumber"], 16)
        header = headers.get(number)
        if header is None or hit["blockHash"].lower() != header.hash or number not in logs:
            raise InconsistentAnswer(f"log of block {number} is from another fork")
    ordered = [log for number in sorted(logs) for log in logs[number]]
    return sorted(token_deposits(ordered, headers, tokens, watched), key=chain_order)


async def token_range(
    reads: ChainReads, chain: ChainConfig, address: str, blocks: BlockRange
) -> tuple[list[ChainTransfer], str]:
    """Token deposits to ``address`` in ``blocks``, and the hash of ``blocks.last``."""
    tokens = frozenset(t.address.lower() for t in chain.tokens)
    watched = WatchedAddresses([address])
    for attempt in range(1, READ_ATTEMPTS + 1):
        hits = await reads.window.transfers_to(address, blocks)
        numbers = sorted({int(hit["blockNumber"], 16) for hit in hits})
        logs, headers = await asyncio.gather(
            reads.window.token_logs(numbers), reads.window.headers(sorted({*numbers, blocks.last}))
        )
        try:
            return (
                token_deposits_of(hits, logs, headers, tokens, watched),
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
    hash of ``blocks.last``."""
    tokens = frozenset(t.address.lower() for t in chain.tokens)
    calls = [("eth_getBlockByNumber", [hex(n), True]) for n in blocks]
    for attempt in range(1, READ_ATTEMPTS + 1):
        full, hits = await asyncio.gather(
            reads.client.batch(calls), reads.window.transfers_to(address, blocks)
        )
        numbers = sorted({int(hit["blockNumber"], 16) for hit in hits})
        logs = await reads.window.token_logs(numbers)
        raw = RawRange(full, [log for number in numbers for log in logs[number]])
        try:
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
