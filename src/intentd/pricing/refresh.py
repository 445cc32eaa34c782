"""Keeping :class:`~intentd.pricing.cache.FeedPrices` current: one loop per chain.

Each loop reads every feed of its chain at one block through a :class:`FeedReader`
(the adapter is ``adapters.evm.price_feeds``), records the reading, and waits
``pricing.refresh_interval``. A read that fails (:class:`FeedUnreadable`) leaves the last
reading in place: it ages and, once older than ``pricing.max_read_age``, its prices
are refused; never a wrong price, and the loop keeps trying, backing off up to
:data:`BACKOFF_CAP` seconds. An outage is logged once when it starts, in a summary
every :data:`SUMMARY_EVERY` seconds while it lasts and once when it ends (with how long
it lasted), not per retry (``intentd_price_feed_read_failures_total`` counts each);
so is every change of a symbol
between usable, refused and depegged. After each attempt the metrics say, per fed
symbol, whether quoting would accept its price (``intentd_price_usable``) and whether
a stablecoin is off its peg (``intentd_token_depegged``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import structlog

from intentd import observability as metrics
from intentd.backoff import Backoff
from intentd.pricing.cache import FeedPrices, SymbolStatus
from intentd.pricing.rounds import ChainReading
from intentd.wait import wait_any

__all__ = ["BACKOFF_CAP", "SUMMARY_EVERY", "FeedReader", "FeedUnreadable", "PriceRefresher"]

log = structlog.get_logger()

BACKOFF_CAP = 30.0
"""Longest wait between attempts during an outage, seconds (at least the interval)."""
SUMMARY_EVERY = 30.0
"""Seconds between two summaries of an outage that goes on (as every outage's,
``supervision.outage_log``)."""


class FeedUnreadable(Exception):
    """The chain's feeds could not be read this time (RPC down, an undecodable head)."""


class FeedReader(Protocol):
    chain: str

    async def read(self) -> ChainReading:
        """Every feed of the chain (and its sequencer feed) at one block; raises
        :class:`FeedUnreadable` when the chain cannot be read."""
        ...

    async def close(self) -> None: ...


class PriceRefresher:
    """Runs one refresh loop per reader until ``stop``."""

    def __init__(
        self,
        prices: FeedPrices,
        readers: Sequence[FeedReader],
        *,
        interval: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._prices = prices
        self._readers = list(readers)
        self._interval = interval
        self._backoff = Backoff(interval, cap=max(interval, BACKOFF_CAP))
        self._clock = clock
        self._tried = {reader.chain: asyncio.Event() for reader in self._readers}
        self._symbols: dict[tuple[str, str], str] = {}

    async def run(self, stop: asyncio.Event) -> None:
        async with asyncio.TaskGroup() as group:
            for reader in self._readers:
                group.create_task(self._follow(reader, stop), name=f"prices-{reader.chain}")

    async def started(self, within: float) -> bool:
        """Wait until every chain was tried once (read or failed), at most ``within``
        seconds; True if all were."""
        waiting = [asyncio.ensure_future(event.wait()) for event in self._tried.values()]
        if not waiting:
            return True
        try:
            done, _ = await asyncio.wait(waiting, timeout=within)
        finally:
            for waiter in waiting:
                waiter.cancel()
        return len(done) == len(waiting)

    async def _follow(self, reader: FeedReader, stop: asyncio.Event) -> None:
        chain = reader.chain
        failures = 0
        outage_since = summarised = 0.0
        while not stop.is_set():
            try:
                reading = await reader.read()
            except FeedUnreadable as exc:
                failures += 1
                metrics.PRICE_FEED_READ_FAILURES.labels(chain).inc()
                now = self._clock()
                if failures == 1:
                    outage_since = summarised = now
                    log.warning(
                        "price feeds unreadable; their prices are refused once older than"
                        " pricing.max_read_age",
                        chain=chain,
                        error=str(exc),
                    )
                elif now - summarised >= SUMMARY_EVERY:
                    summarised = now
                    log.warning(
                        "price feeds still unreadable",
                        chain=chain,
                        seconds=round(now - outage_since, 1),
                        failed_attempts=failures,
                        error=str(exc),
                    )
                delay = self._backoff.delay(failures)
            else:
                if failures:
                    log.info(
                        "price feeds readable again",
                        chain=chain,
                        failed_attempts=failures,
                        outage_seconds=round(self._clock() - outage_since, 1),
                    )
                failures = 0
                self._prices.record(chain, reading)
                self._report_feeds(chain, reading)
                delay = self._interval
            self._tried[chain].set()
            self._report_symbols()
            await wait_any(stop, within=delay)

    def _report_feeds(self, chain: str, reading: ChainReading) -> None:
        for address, feed in reading.feeds.items():
            if feed.round is not None and feed.decimals is not None:
                answer = feed.round.answer / 10**feed.decimals  # a gauge, never money
                metrics.PRICE_FEED_ANSWER.labels(chain, address).set(answer)
                metrics.PRICE_FEED_UPDATED.labels(chain, address).set(feed.round.updated_at)

    def _report_symbols(self) -> None:
        settled = all(event.is_set() for event in self._tried.values())
        for status in self._prices.statuses():
            labels = (status.network, status.symbol)
            metrics.PRICE_USABLE.labels(*labels).set(0 if status.refused else 1)
            metrics.TOKEN_DEPEGGED.labels(*labels).set(1 if status.depegged else 0)
            if settled:  # not before every chain was tried once: "not read yet" is no news
                self._log_change(status)

    def _log_change(self, status: SymbolStatus) -> None:
        state = "refused" if status.refused else "depegged" if status.depegged else "usable"
        group = (status.network, status.symbol)
        before = self._symbols.get(group)
        self._symbols[group] = state
        if state == before or (before is None and state == "usable"):
            return
        fields = {"network": status.network, "symbol": status.symbol}
        if status.refused is not None:
            log.warning("price refused", **fields, reason=status.refused.detail)
        elif status.depegged:
            assert status.price is not None
            log.error("stablecoin off its peg; refused", **fields, usd=str(status.price.usd))
        else:
            log.info("price usable again", **fields, was=before)
