"""Which intent addresses the balance reconciliation of a chain covers (PostgreSQL).

:class:`PostgresOpenNativeIntents` is both the poller's
:class:`~intentd.indexer.ports.AddressSource` (the watched set reads every intent
through it: the live ones, those ended within its watch window, see
``indexer.watch_refresh``) and its
:class:`~intentd.chain.evm.reconciliation.OpenNativeIntents`: from
the same rows it keeps, in memory, the intents whose source chain is the chain and
whose ``tokenIn`` is the native coin, with their reconciliation windows
(:func:`intentd.indexer.open_native.funding_window`, kept in an
:class:`~intentd.indexer.open_native.OpenNativeWindows`).

So every intent is in the open set as soon as it is in the watched set, which the
poller refreshes after a batch's blocks were read and before they are matched and
reconciled (an intent committed before its payment block was read is reconciled).
What narrows a window is the intent's end (``terminal_at``): when asked for the
windows, and at most once every :data:`ENDS_EVERY` seconds, the source reads the
native-coin intents of the chain that ended since it last looked (a range of the
``intents_ended`` index, from :data:`ENDS_OVERLAP` before the newest end it saw, for
transactions that commit a while after they stamped it). With no native-coin intent
known it reads nothing. An end learnt late, or missed, costs reads, never a deposit:
the window then stays as wide as before (an hour after the expiry). Windows that
ended a day before the newest block asked about are forgotten (a rewind never goes
back that far).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import asyncpg

from intentd.adapters.postgres import Pool
from intentd.chain.evm.balances import Reconciled
from intentd.indexer.open_native import NativeIntent, OpenNativeWindows
from intentd.indexer.ports import IntentAddress
from intentd.settings import NATIVE_TOKEN

__all__ = ["PostgresOpenNativeIntents"]

_NATIVE = NATIVE_TOKEN.lower()
# Each read returns what the watched set asked for; the times only for ours.
# One statement per read, each a range scan of one index: the key (new ids, the usual
# refresh, and gaps), intents_live and intents_ended (0013: a poller's first load, and
# the intents leaving the watch window).
_SELECT = """
    SELECT id, intent_address, terminal_at,
           CASE WHEN ours THEN created_at END AS created_at,
           CASE WHEN ours THEN expires_at END AS expires_at
      FROM (SELECT id, intent_address, terminal_at, created_at, expires_at,
                   source_chain = $2 AND lower(token_in) = $3 AS ours
              FROM intents WHERE {where} ORDER BY {order} LIMIT $1) AS page
"""
_NEWER = _SELECT.format(where="id > $4", order="id")
_WITH_GAPS = _SELECT.format(where="id > $4 OR id = ANY($5::bigint[])", order="id")
_LIVE = _SELECT.format(where="terminal_at IS NULL AND id > $4", order="id")
_ENDED = "terminal_at IS NOT NULL AND (terminal_at, id) > ($4, $5)"
_ENDED_AFTER = _SELECT.format(where=_ENDED, order="terminal_at, id")
_ENDED_UNTIL = _SELECT.format(where=f"{_ENDED} AND terminal_at <= $6", order="terminal_at, id")
_EPOCH = datetime.fromisoformat("0001-01-01T00:00:00+00:00")
# The chain's native-coin intents that ended after ($2, $3): a range of intents_ended.
_OURS_ENDED = """
    SELECT id, intent_address, created_at, expires_at, terminal_at FROM intents
     WHERE terminal_at IS NOT NULL AND (terminal_at, id) > ($2, $3)
       AND source_chain = $4 AND lower(token_in) = $5
     ORDER BY terminal_at, id LIMIT $1
"""
ENDS_EVERY = 1.0
"""Seconds between two reads of the native-coin intents that ended."""
ENDS_OVERLAP = timedelta(seconds=30)
"""How far before the newest end seen the next read starts again."""
_ENDS_PAGE = 10_000


class PostgresOpenNativeIntents:
    def __init__(
        self, pool: Pool, chain: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._pool = pool
        self._chain = chain
        self._open = OpenNativeWindows()
        self._clock = clock
        self._ends_since: datetime | None = None
        """The newest end seen (at first: when the first rows were read)."""
        self._ends_read_at: float | None = None

    async def intent_addresses(
        self, after_id: int, also_ids: Sequence[int], limit: int
    ) -> list[IntentAddress]:
        if also_ids:
            return await self._read(_WITH_GAPS, limit, after_id, list(also_ids))
        return await self._read(_NEWER, limit, after_id)

    async def live_intents(self, after_id: int, limit: int) -> list[IntentAddress]:
        return await self._read(_LIVE, limit, after_id)

    async def ended_intents(
        self, after: tuple[datetime, int] | None, until: datetime | None, limit: int
    ) -> list[IntentAddress]:
        since, after_id = after if after is not None else (_EPOCH, 0)
        if until is None:
            return await self._read(_ENDED_AFTER, limit, since, after_id)
        return await self._read(_ENDED_UNTIL, limit, since, after_id, until)

    async def newest_id(self) -> int:
        newest: int | None = await self._pool.fetchval("SELECT max(id) FROM intents")
        return newest or 0

    async def _read(self, query: str, limit: int, *args: object) -> list[IntentAddress]:
        if self._ends_since is None:
            self._ends_since = datetime.now(UTC)
        rows = await self._pool.fetch(query, limit, self._chain, _NATIVE, *args)
        for row in rows:
            self._remember(row)
        return [IntentAddress(row["id"], row["intent_address"], row["terminal_at"]) for row in rows]

    def _remember(self, row: asyncpg.Record) -> None:
        if row["created_at"] is not None:
            self._open.remember(_native(row))

    async def reconciled(self, first_time: int, last_time: int) -> list[Reconciled]:
        """The open windows that meet ``first_time..last_time``: the intents of the last
        refresh of the watched set that reads through this source, narrowed by the ends
        learnt since."""
        if len(self._open):
            await self._learn_ends()
        return self._open.reconciled(first_time, last_time)

    async def _learn_ends(self) -> None:
        now = self._clock()
        if self._ends_read_at is not None and now - self._ends_read_at < ENDS_EVERY:
            return
        self._ends_read_at = now
        assert self._ends_since is not None  # set by the first read of rows
        after = (self._ends_since - ENDS_OVERLAP, 0)
        while True:
            rows = await self._pool.fetch(_OURS_ENDED, _ENDS_PAGE, *after, self._chain, _NATIVE)
            for row in rows:
                self._open.remember(_native(row))
            if rows:
                after = (rows[-1]["terminal_at"], rows[-1]["id"])
                self._ends_since = max(self._ends_since, after[0])
            if len(rows) < _ENDS_PAGE:
                return


def _native(row: asyncpg.Record) -> NativeIntent:
    ended = row["terminal_at"]
    return NativeIntent(
        row["intent_address"].lower(),
        int(row["created_at"].timestamp()),
        int(row["expires_at"].timestamp()),
        None if ended is None else int(ended.timestamp()),
    )
