"""Chainlink-style price feeds over JSON-RPC, and the running price source of a role.

:class:`ChainlinkReader` is the refresher's :class:`~intentd.pricing.refresh.FeedReader`
for one chain: it asks the chain's head (``eth_getBlockByNumber("latest")``), then
calls ``latestRoundData()`` and ``decimals()`` of every feed, and the sequencer uptime
feed's ``latestRoundData()``, all with ``eth_call`` at that block number, so every
answer comes from the same block whichever node serves it. A feed whose answer does not
decode (no contract at the address: ``0x``) is recorded as such and refused by the
judge; a failed request (RPC down, an error answer, a revert) is
:class:`~intentd.pricing.refresh.FeedUnreadable` for the whole chain. The client is
:class:`~intentd.adapters.evm.json_rpc.JsonRpcClient` (chain id checked, failover), with
few retries (failed attempts are debug lines, as for every client): the refresher
retries and logs outages once.

:func:`running_prices` gives a role its price source: without feeds, the config's
prices (:class:`~intentd.pricing.cache.FeedPrices` falls back to the static table);
with feeds, the same source kept current by a background
:class:`~intentd.pricing.refresh.PriceRefresher` for as long as the context is open.
It waits (at most ``wait_first`` seconds) until every chain was tried once, so a role
does not start by refusing prices it could have read.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import structlog

from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.chain.errors import ChainUnavailable, NoAnswer
from intentd.pricing.cache import FeedPrices
from intentd.pricing.refresh import FeedUnreadable, PriceRefresher
from intentd.pricing.rounds import ChainReading, ChainView, FeedReading, Round
from intentd.settings import Settings

__all__ = [
    "DECIMALS",
    "LATEST_ROUND_DATA",
    "ChainlinkReader",
    "decode_round",
    "running_prices",
]

log = structlog.get_logger()

LATEST_ROUND_DATA = "0xfeaf968c"
"""Selector of ``latestRoundData()``."""
DECIMALS = "0x313ce567"
"""Selector of ``decimals()``."""
_WORD = 64  # hex digits in one ABI word
_READ_ATTEMPTS = 2


def _words(result: Any, count: int) -> list[int] | None:
    if not isinstance(result, str) or not result.startswith("0x"):
        return None
    body = result[2:]
    if len(body) < count * _WORD:
        return None
    try:
        return [int(body[i * _WORD : (i + 1) * _WORD], 16) for i in range(count)]
    except ValueError:
        return None


def decode_round(round_data: Any, decimals: Any) -> FeedReading:
    """A feed's ``latestRoundData`` and ``decimals`` answers (hex ``eth_call`` results)."""
    words = _words(round_data, 5)
    if words is None:
        return FeedReading(
            None, None, f"latestRoundData answered {str(round_data)[:20]!r}: no feed there?"
        )
    round_id, answer, started_at, updated_at, answered_in_round = words
    if answer >= 2**255:  # int256, two's complement
        answer -= 2**256
    places = None
    if decimals is not None:
        found = _words(decimals, 1)
        if found is None or found[0] > 255:
            return FeedReading(None, None, f"decimals answered {str(decimals)[:20]!r}")
        places = found[0]
    return FeedReading(Round(round_id, answer, started_at, updated_at, answered_in_round), places)


class ChainlinkReader:
    """Reads every feed of one chain, and its sequencer uptime feed, at one block."""

    def __init__(
        self,
        client: JsonRpcClient,
        feeds: Sequence[str],
        *,
        sequencer: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.chain = client.chain
        self._client = client
        self._feeds = list(feeds)
        self._sequencer = sequencer
        self._clock = clock

    async def read(self) -> ChainReading:
        try:
            head = await self._client.call("eth_getBlockByNumber", ["latest", False])
            number, timestamp = int(head["number"], 16), int(head["timestamp"], 16)
            at = hex(number)
            calls = [
                ("eth_call", [{"to": address, "data": data}, at])
                for address in self._feeds
                for data in (LATEST_ROUND_DATA, DECIMALS)
            ]
            if self._sequencer is not None:
                calls.append(("eth_call", [{"to": self._sequencer, "data": LATEST_ROUND_DATA}, at]))
            answers = await self._client.batch(calls)
        except (ChainUnavailable, NoAnswer) as exc:
            raise FeedUnreadable(f"{type(exc).__name__}: {exc}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise FeedUnreadable(f"the head block answer is malformed: {exc}") from exc
        feeds = {
            address.lower(): decode_round(answers[2 * i], answers[2 * i + 1])
            for i, address in enumerate(self._feeds)
        }
        sequencer = decode_round(answers[-1], None) if self._sequencer is not None else None
        view = ChainView(number, timestamp, self._clock())
        return ChainReading(view, feeds, sequencer)

    async def close(self) -> None:
        await self._client.close()


@contextlib.asynccontextmanager
async def running_prices(
    settings: Settings, *, wait_first: float = 5.0
) -> AsyncIterator[FeedPrices]:
    """The role's price source, refreshed in the background while the context is open."""
    prices = FeedPrices(settings)
    readers = []
    for name, wanted in prices.catalogue.chains.items():
        config = settings.chains[name]
        client = JsonRpcClient(
            name,
            config.rpc_urls,
            timeout=config.rpc_timeout,
            attempts=_READ_ATTEMPTS,
            chain_id=config.chain_id,
        )
        readers.append(ChainlinkReader(client, wanted.feeds, sequencer=wanted.sequencer))
    if not readers:
        yield prices
        return
    refresher = PriceRefresher(prices, readers, interval=settings.pricing.refresh_interval)
    stop = asyncio.Event()
    task = asyncio.create_task(refresher.run(stop), name="price-refresher")
    task.add_done_callback(_report_end)
    try:
        await refresher.started(wait_first)
        yield prices
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)  # an error was logged by _report_end
        for reader in readers:
            await reader.close()


def _report_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error(
            "price refresher stopped; prices with feeds are refused once stale",
            error=repr(task.exception()),
        )
