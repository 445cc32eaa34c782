"""``eth_getLogs`` of the chain's token ``Transfer`` logs, each answer with its proof.

:class:`LogReader` is how every ranged reader of deposits asks for logs (the poller's
``adapters.evm.chain_reader.EvmChainReader``, trigger-processing's
``adapters.evm.window_logs.IntentWindowReader``, and through them ``intents rescan``, the
lifecycle's gap recovery and the trigger verifier). It guarantees:

- **Proof.** Each POST asks the *anchor* block's header before and after its log
  queries (``JsonRpcClient.together``: one POST, one node), and each answer carries
  those hashes (:class:`~intentd.chain.evm.coverage.LogsAnswer`); the caller accepts it
  only if they are the hash it read at the anchor (``chain.evm.coverage.proven_logs``).
  A node without the anchor answers null, which is no answer: the POST is retried
  (``MissingResult``), never read as "no logs".
- **Shrinking.** A provider's range or size refusal (``RangeLimitError``) halves the
  width, which is remembered (``chain.evm.log_ranges.LogRangeSizer``); several ranges in
  one POST are asked one per POST after a refusal. A one-block range still refused
  (a block whose logs exceed the provider's result cap, or a provider that says
  "limit exceeded" for anything) is read from the block's receipts
  (``eth_getBlockReceipts``, with the same anchors), so no block is ever skipped.
  Refusals are counted in ``intentd_rpc_log_refusals_total{chain,action}``
  (``split``, ``alone``, ``from_receipts``). A receipts read that fails is retried by
  the client and then raised (``ChainUnavailable``): the caller waits and reads again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog

from intentd import observability as metrics
from intentd.adapters.evm.json_rpc import Call, JsonRpcClient, RangeLimitError
from intentd.chain.blocks import BlockRange
from intentd.chain.evm.coverage import LogsAnswer
from intentd.chain.evm.decoding import TRANSFER_TOPIC
from intentd.chain.evm.log_ranges import LogRangeSizer

__all__ = ["RANGES_PER_POST", "LogReader", "recipient_topic"]

log = structlog.get_logger()

RANGES_PER_POST = 8
"""``eth_getLogs`` ranges asked in one POST (between its two anchor calls)."""


def recipient_topic(address: str) -> str:
    """``address`` as an indexed topic: left-padded to 32 bytes, lower case."""
    return "0x" + address.lower().removeprefix("0x").rjust(64, "0")


class LogReader:
    """Proven ``Transfer`` log reads of one chain's tokens; the caller closes the client."""

    def __init__(
        self,
        client: JsonRpcClient,
        tokens: Sequence[str],
        *,
        max_log_range: int,
        ranges_per_post: int = RANGES_PER_POST,
    ) -> None:
        self._client = client
        self._tokens = sorted({token.lower() for token in tokens})
        self._per_post = max(1, min(ranges_per_post, client.max_calls - 2))
        self.log_ranges = LogRangeSizer(max_log_range)

    async def read(
        self, ranges: Sequence[BlockRange], *, anchor: int, recipient: str | None = None
    ) -> list[LogsAnswer]:
        """The ``Transfer`` logs of the tokens in ``ranges`` (to ``recipient`` only, if
        given), one answer per range asked, in order, each anchored at ``anchor`` (at or
        above every range)."""
        topics: list[str | None] = [TRANSFER_TOPIC]
        if recipient is not None:
            topics += [None, recipient_topic(recipient)]
        answers: list[LogsAnswer] = []
        pending = list(ranges)
        alone = False  # after a refusal of several one-block ranges: one per POST
        while pending:
            parts, rest = self._take(pending, 1 if alone else self._per_post)
            try:
                answers.extend(await self._ask(parts, anchor, topics))
            except RangeLimitError as exc:
                if len(parts[0]) > 1:
                    self.log_ranges.refused(len(parts[0]))  # halves the width below it
                    self._refused("split", parts[0], exc)
                elif len(parts) > 1:
                    alone = True
                    self._refused("alone", parts[0], exc)
                else:
                    self._refused("from_receipts", parts[0], exc)
                    answers.append(await self._from_receipts(parts[0].first, anchor, topics))
                    pending, alone = rest, False
                continue
            pending, alone = rest, False
        return answers

    async def _ask(
        self, parts: list[BlockRange], anchor: int, topics: list[str | None]
    ) -> list[LogsAnswer]:
        header: Call = ("eth_getBlockByNumber", [hex(anchor), False])
        queries: list[Call] = [("eth_getLogs", [self._query(part, topics)]) for part in parts]
        before, *found, after = await self._client.together([header, *queries, header])
        hashes = (str(before["hash"]), str(after["hash"]))
        for part in parts:
            self.log_ranges.succeeded(len(part))
        return [
            LogsAnswer(part, logs, anchor, hashes) for part, logs in zip(parts, found, strict=True)
        ]

    async def _from_receipts(
        self, number: int, anchor: int, topics: list[str | None]
    ) -> LogsAnswer:
        """Block ``number``'s logs (as ``topics`` select them) from its receipts."""
        header: Call = ("eth_getBlockByNumber", [hex(anchor), False])
        before, receipts, after = await self._client.together(
            [header, ("eth_getBlockReceipts", [hex(number)]), header]
        )
        tokens = set(self._tokens)
        logs = [
            entry
            for receipt in receipts
            for entry in receipt.get("logs") or []
            if str(entry.get("address", "")).lower() in tokens and _matches(entry, topics)
        ]
        return LogsAnswer(
            BlockRange(number, number), logs, anchor, (str(before["hash"]), str(after["hash"]))
        )

    def _take(
        self, pending: list[BlockRange], count: int
    ) -> tuple[list[BlockRange], list[BlockRange]]:
        """Up to ``count`` parts of at most the current width from the front of
        ``pending``, and what remains after them."""
        width = self.log_ranges.width
        rest = list(pending)
        parts: list[BlockRange] = []
        while rest and len(parts) < count:
            whole = rest[0]
            part = BlockRange(whole.first, min(whole.first + width - 1, whole.last))
            parts.append(part)
            if part.last == whole.last:
                rest.pop(0)
            else:
                rest[0] = BlockRange(part.last + 1, whole.last)
        return parts, rest

    def _refused(self, action: str, part: BlockRange, exc: RangeLimitError) -> None:
        metrics.RPC_LOG_REFUSALS.labels(self._client.chain, action).inc()
        event = {
            "split": "eth_getLogs range refused; splitting",
            "alone": "eth_getLogs refused; asking one range per request",
            "from_receipts": "eth_getLogs refused for one block; reading its receipts",
        }[action]
        log.info(
            event,
            chain=self._client.chain,
            blocks=str(part),
            width=self.log_ranges.width,
            error=exc.message,
        )

    def _query(self, blocks: BlockRange, topics: list[str | None]) -> dict[str, Any]:
        return {
            "fromBlock": hex(blocks.first),
            "toBlock": hex(blocks.last),
            "address": self._tokens,
            "topics": topics,
        }


def _matches(entry: dict[str, Any], topics: list[str | None]) -> bool:
    """Whether a log matches an ``eth_getLogs`` topic filter (None matches anything)."""
    found = [str(t).lower() for t in entry.get("topics") or []]
    return all(
        wanted is None or (i < len(found) and found[i] == wanted) for i, wanted in enumerate(topics)
    )
