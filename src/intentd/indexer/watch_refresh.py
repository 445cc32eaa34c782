"""Keeping the watched set current from the intents table, without restarts."""

from __future__ import annotations

import time
from collections.abc import Callable

from intentd.indexer.ports import AddressSource
from intentd.indexer.watched import IntentIdTracker, WatchedAddresses

__all__ = ["WatchedIntents"]


class WatchedIntents:
    """The addresses of all intents, refreshed incrementally on demand.

    :meth:`refresh` returns once every intent committed before the call started is
    in :attr:`addresses` (see ``watched`` for the in-flight ids it keeps asking for).
    """

    def __init__(
        self,
        source: AddressSource,
        *,
        page: int = 50_000,
        clock: Callable[[], float] = time.monotonic,
        tracker: IntentIdTracker | None = None,
    ) -> None:
        self.addresses = WatchedAddresses()
        self._source = source
        self._page = page
        self._clock = clock
        self._ids = tracker or IntentIdTracker()

    async def refresh(self) -> int:
        """Read the intents added since the last refresh; return how many were new."""
        added = 0
        while True:
            now = self._clock()
            rows = await self._source.intent_addresses(
                self._ids.last_id, self._ids.gaps(now), self._page
            )
            for _, address in rows:
                self.addresses.add(address)
            self._ids.saw((row_id for row_id, _ in rows), now)
            added += len(rows)
            if len(rows) < self._page:
                return added

    def __len__(self) -> int:
        return len(self.addresses)
