"""Keeping the watched set current from the intents table, without restarts.

What it guarantees (the decisions are ``watched``'s; docs/indexer.md, "How long an
address is watched"):

- every intent committed before a :meth:`WatchedIntents.refresh` started, or while it
  ran (the first load included), is watched after it, unless it became terminal at or
  before the set's cutoff (see ``watched`` for the in-flight ids it keeps asking for);
- a live intent is never dropped, nor one that became terminal after the cutoff; the
  cutoff only moves forward, and only when the caller gives a chain time;
- intents leave the set while the poller runs: each move of the cutoff reads the
  intents that became terminal in between (one range of the ``intents_ended`` index)
  and drops them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from intentd.chain.evm.addresses import WatchedAddresses
from intentd.indexer.ports import AddressSource, IntentAddress
from intentd.indexer.watched import IntentIdTracker, is_watched, sweep_span, watch_cutoff

__all__ = ["WatchedIntents"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class WatchedIntents:
    """The addresses of the intents in the watch window, refreshed on demand.

    ``retention`` None watches every intent forever (tests, tools). Otherwise the first
    :meth:`refresh` given a chain time loads only the live intents and those terminal
    after its cutoff, through the indexes; a first refresh without one loads them all.
    """

    def __init__(
        self,
        source: AddressSource,
        *,
        retention: timedelta | None = None,
        page: int = 50_000,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = _utc_now,
        tracker: IntentIdTracker | None = None,
    ) -> None:
        if retention is not None and retention <= timedelta(0):
            raise ValueError("retention must be positive")
        self.addresses = WatchedAddresses()
        self._source = source
        self._retention = retention
        self._page = page
        self._clock = clock
        self._wall_clock = wall_clock
        self._ids = tracker or IntentIdTracker()
        self._loaded = False
        self.cutoff: datetime | None = None
        """Intents terminal at or before it are not watched (None: none dropped yet)."""

    async def refresh(self, chain_time: datetime | None = None) -> int:
        """Read the intents added since the last refresh and drop those that left the
        window by ``chain_time`` (the time of the last block the poller processed; None
        drops none). Return how many addresses were added or dropped."""
        cutoff = None
        if chain_time is not None and self._retention is not None:
            cutoff = watch_cutoff(chain_time, self._wall_clock(), self._retention)
        if not self._loaded:
            self._loaded = True
            if cutoff is not None:
                return await self._load(cutoff)
            return await self._add_new()
        changed = await self._add_new()
        if cutoff is not None:
            changed += await self._sweep(cutoff)
        return changed

    async def _load(self, cutoff: datetime) -> int:
        """The live intents, those ended after ``cutoff``, then every id from a little
        below the newest *when the load began*: the intents committed while it read
        (however many a busy API made) and those still in flight then (gaps)."""
        self.cutoff = cutoff
        newest_at_start = await self._source.newest_id()
        after_id = 0
        while rows := await self._source.live_intents(after_id, self._page):
            self._add(rows)
            after_id = rows[-1].id
            if len(rows) < self._page:
                break
        after: tuple[datetime, int] = (cutoff, 2**63 - 1)
        while rows := await self._source.ended_intents(after, None, self._page):
            self._add(rows)
            last = rows[-1]
            assert last.terminal_at is not None
            after = (last.terminal_at, last.id)
            if len(rows) < self._page:
                break
        # Ids a little below the newest at the start may still have been in flight:
        # ask for them again, as a refresh does, so that the tracker learns which are
        # missing; and every id above that, committed during the reads above.
        self._ids.skip_to(newest_at_start - self._ids.max_gaps)
        await self._add_new()
        return len(self.addresses)

    async def _add_new(self) -> int:
        added = 0
        while True:
            now = self._clock()
            rows = await self._source.intent_addresses(
                self._ids.last_id, self._ids.gaps(now), self._page
            )
            added += self._add(rows)
            self._ids.saw((row.id for row in rows), now)
            if len(rows) < self._page:
                return added

    def _add(self, rows: list[IntentAddress]) -> int:
        added = 0
        for row in rows:
            if is_watched(row.terminal_at, self.cutoff):
                self.addresses.add(row.address)
                added += 1
        return added

    async def _sweep(self, cutoff: datetime) -> int:
        """Drop the intents that became terminal up to ``cutoff``."""
        span = sweep_span(self.cutoff, cutoff)
        if span is None:
            return 0
        since, until = span
        after = None if since is None else (since, 2**63 - 1)
        dropped = 0
        while rows := await self._source.ended_intents(after, until, self._page):
            for row in rows:
                self.addresses.discard(row.address)
            dropped += len(rows)
            last = rows[-1]
            assert last.terminal_at is not None
            after = (last.terminal_at, last.id)
            if len(rows) < self._page:
                break
        self.cutoff = cutoff
        return dropped

    def __len__(self) -> int:
        return len(self.addresses)
