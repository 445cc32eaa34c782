"""The transfers to one intent address in a block range, read as narrowly as it allows.

- :func:`token_range` (an intent whose ``tokenIn`` is an ERC-20): ``Transfer`` logs of
  the chain's tokens filtered at the node by the intent's address as recipient
  (:class:`~intentd.scanning.ports.IntentWindow`), then, for the few blocks holding one, every
  ``Transfer`` log of those tokens, decoded by the poller's code
  (``chain.evm.decoding.token_deposits``): the same deposits with the same identities
  as the poller's, a wrong-token deposit included. No block is read in full, so a
  range can be a week of blocks; native coin sent to a token intent is not looked
  for (the poller finds it where one runs).
- :func:`native_range` (an intent whose ``tokenIn`` is the native coin): the blocks in
  full (``ScanChain.full_blocks``), as the poller reads them, with the token logs read
  as above, decoded by the poller's ``chain.evm.range_deposits.scan_range``: native
  value counts only with a successful receipt, and the balance reconciliation finds
  the coin that arrived through a contract, over the same full blocks as the poller.

Every log answer is proven whole (``chain.evm.coverage``): asked with the answering
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

from intentd.chain.blocks import BlockHeader, BlockRange
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.balances import Reconciled
from intentd.chain.evm.coverage import LogsAnswer, proven_logs
from intentd.chain.evm.decoding import decode_headers, token_deposits
from intentd.chain.evm.ports import RawRange
from intentd.chain.evm.range_deposits import scan_range
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.chain.transfers import ChainTransfer, chain_order
from intentd.scanning.ports import ScanChain
from intentd.scanning.service import tokens_of
from intentd.settings import ChainConfig

__all__ = ["READ_ATTEMPTS", "native_range", "token_deposits_of", "token_range"]

READ_ATTEMPTS = 3


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
    (``chain.evm.coverage.proven_logs``: the hits cover ``blocks``, their node's block
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
    reads: ScanChain, chain: ChainConfig, address: str, blocks: BlockRange
) -> tuple[list[ChainTransfer], str]:
    """Token deposits to ``address`` in ``blocks``, and the hash of ``blocks.last``."""
    tokens = tokens_of(chain)
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
    reads: ScanChain,
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
    tokens = tokens_of(chain)
    for attempt in range(1, READ_ATTEMPTS + 1):
        full, hits = await asyncio.gather(
            reads.full_blocks(blocks), reads.window.transfers_to(address, blocks)
        )
        numbers = sorted({int(log["blockNumber"], 16) for a in hits for log in a.logs})
        raw = RawRange(full, await reads.window.token_logs(numbers, anchor=blocks.last))
        try:
            read = decode_headers(full, blocks)
            proven_logs(hits, {h.number: h.hash for h in read}, covering=blocks if tokens else None)
            headers, found = await scan_range(
                chain.name,
                reads,
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
