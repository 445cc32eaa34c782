"""trigger-processing's reads of one intent's window: logs filtered at the node.

The poller reads every block in full and every ``Transfer`` log of the chain's tokens,
because it watches many addresses. One intent needs far less, and
:class:`IntentWindowReader` asks the node for only that:

- :meth:`~IntentWindowReader.transfers_to`: the ``Transfer`` logs of the chain's tokens
  whose recipient topic is the intent's address (``eth_getLogs`` with topics
  ``[Transfer, None, recipient]``), over ranges of at most the chain's
  ``max_log_range`` blocks, several ranges per JSON-RPC batch; a provider's range or
  size refusal halves the width, which is remembered
  (``indexer.planning.LogRangeSizer``), as the poller's reader does.
- :meth:`~IntentWindowReader.token_logs`: every ``Transfer`` log of the chain's tokens
  in the few blocks where such a log was found, the poller's own query restricted to
  one block. A deposit's identity counts its log among its transaction's ``Transfer``
  logs of the same token whatever their recipient (``indexer.decoding``), so it is
  decoded from these, never from the filtered answer: the identity is the poller's.
- :meth:`~IntentWindowReader.headers`: block headers without transactions.

Errors are the JSON-RPC client's (``adapters.json_rpc``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog

from intentd.adapters.json_rpc import JsonRpcClient, RangeLimitError
from intentd.indexer.decoding import TRANSFER_TOPIC, BlockHeader, decode_headers
from intentd.indexer.planning import BlockRange, LogRangeSizer

__all__ = ["RANGES_PER_BATCH", "IntentWindowReader", "recipient_topic"]

log = structlog.get_logger()
RANGES_PER_BATCH = 8
"""``eth_getLogs`` ranges sent in one JSON-RPC batch."""


def recipient_topic(address: str) -> str:
    """``address`` as an indexed topic: left-padded to 32 bytes, lower case."""
    return "0x" + address.lower().removeprefix("0x").rjust(64, "0")


class IntentWindowReader:
    """Narrow reads of one chain for trigger-processing; the caller closes the client."""

    def __init__(self, client: JsonRpcClient, tokens: Sequence[str], *, max_log_range: int):
        self._client = client
        self._tokens = sorted({token.lower() for token in tokens})
        self.log_ranges = LogRangeSizer(max_log_range)

    async def transfers_to(self, recipient: str, blocks: BlockRange) -> list[dict[str, Any]]:
        """``Transfer`` logs of the chain's tokens to ``recipient`` in ``blocks``, in order."""
        if not self._tokens:
            return []
        topics = [TRANSFER_TOPIC, None, recipient_topic(recipient)]
        found: list[dict[str, Any]] = []
        first = blocks.first
        while first <= blocks.last:
            parts = self._parts(first, blocks.last)
            calls = [("eth_getLogs", [self._query(part, topics)]) for part in parts]
            try:
                answers = await self._client.batch(calls)
            except RangeLimitError as exc:
                if len(parts[0]) == 1:
                    raise
                self.log_ranges.refused(len(parts[0]))
                log.info(
                    "eth_getLogs range refused; splitting",
                    chain=self._client.chain,
                    blocks=str(parts[0]),
                    width=self.log_ranges.width,
                    error=exc.message,
                )
                continue
            for part, answer in zip(parts, answers, strict=True):
                self.log_ranges.succeeded(len(part))
                found.extend(answer)
            first = parts[-1].last + 1
        return found

    async def token_logs(self, numbers: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        """Every ``Transfer`` log of the chain's tokens in each block of ``numbers``."""
        calls = [
            ("eth_getLogs", [self._query(BlockRange(n, n), [TRANSFER_TOPIC])]) for n in numbers
        ]
        answers = await self._client.batch(calls)
        return dict(zip(numbers, answers, strict=True))

    async def headers(self, numbers: Sequence[int]) -> dict[int, BlockHeader]:
        """The headers of the blocks ``numbers`` (which must exist)."""
        calls = [("eth_getBlockByNumber", [hex(n), False]) for n in numbers]
        blocks = await self._client.batch(calls)
        return {
            n: decode_headers([block], BlockRange(n, n))[0]
            for n, block in zip(numbers, blocks, strict=True)
        }

    def _parts(self, first: int, last: int) -> list[BlockRange]:
        width = self.log_ranges.width
        parts: list[BlockRange] = []
        while first <= last and len(parts) < RANGES_PER_BATCH:
            parts.append(BlockRange(first, min(first + width - 1, last)))
            first = parts[-1].last + 1
        return parts

    def _query(self, blocks: BlockRange, topics: list[str | None]) -> dict[str, Any]:
        return {
            "fromBlock": hex(blocks.first),
            "toBlock": hex(blocks.last),
            "address": self._tokens,
            "topics": topics,
        }
