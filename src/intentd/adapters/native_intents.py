"""Which intent addresses the balance reconciliation of a chain covers (PostgreSQL).

:class:`PostgresOpenNativeIntents` is the poller's
:class:`~intentd.indexer.reconciliation.OpenNativeIntents`: the intents whose source chain
is the chain and whose ``tokenIn`` is the native coin, and whose reconciliation window
(:meth:`intentd.indexer.balances.Reconciled.of_intent`) meets the batch's block times.
The poller knows no states, so the window is what makes an intent "open": from a little
before its creation to a while after its expiry (both fixed when it is created).

The set is kept in memory and refreshed before every answer, incrementally by intent id
with the watched set's gap tracking (``indexer.watched.IntentIdTracker``): an intent
committed before the call is in the answer, and a refresh costs one indexed query that
returns only the intents added since the last one. Windows that ended a day before the
newest block asked about are forgotten (a rewind never goes back that far).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from intentd.adapters.postgres import Pool
from intentd.indexer.balances import Reconciled
from intentd.indexer.watched import IntentIdTracker
from intentd.settings import NATIVE_TOKEN

__all__ = ["PostgresOpenNativeIntents"]

_NATIVE = NATIVE_TOKEN.lower()
# Every id comes back (the gap tracking needs them); the other columns only for ours.
# Two statements, so that the usual one (no gaps) is a plain range scan of the key.
_SELECT = """
    SELECT id,
           CASE WHEN ours THEN intent_address END AS intent_address,
           CASE WHEN ours THEN created_at END AS created_at,
           CASE WHEN ours THEN expires_at END AS expires_at
      FROM (SELECT *, source_chain = $3 AND lower(token_in) = $4 AS ours FROM intents
             WHERE {where} ORDER BY id LIMIT $2) AS page
"""
_NEWER = _SELECT.format(where="id > $1")
_WITH_GAPS = _SELECT.format(where="id > $1 OR id = ANY($5::bigint[])")
_KEEP = 86_400
"""Seconds a window is kept after it ended (measured in block time)."""


class PostgresOpenNativeIntents:
    def __init__(
        self,
        pool: Pool,
        chain: str,
        *,
        page: int = 50_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        self._chain = chain
        self._page = page
        self._clock = clock
        self._ids = IntentIdTracker()
        self._open: dict[str, Reconciled] = {}

    async def reconciled(self, first_time: int, last_time: int) -> list[Reconciled]:
        await self._refresh()
        self._open = {
            address: window
            for address, window in self._open.items()
            if window.last_time >= last_time - _KEEP
        }
        return [
            window
            for window in self._open.values()
            if window.first_time <= last_time and first_time <= window.last_time
        ]

    async def _refresh(self) -> None:
        while True:
            now = self._clock()
            gaps = self._ids.gaps(now)
            rows = await self._pool.fetch(
                _WITH_GAPS if gaps else _NEWER,
                self._ids.last_id,
                self._page,
                self._chain,
                _NATIVE,
                *([gaps] if gaps else []),
            )
            for row in rows:
                if row["intent_address"] is not None:
                    window = Reconciled.of_intent(
                        row["intent_address"],
                        int(row["created_at"].timestamp()),
                        int(row["expires_at"].timestamp()),
                    )
                    self._open[window.address] = window
            self._ids.saw((row["id"] for row in rows), now)
            if len(rows) < self._page:
                return
