"""Data a schema migration leaves to fill in, filled in small batches after it.

A migration that must rewrite many rows would hold their locks (and, with a schema
change in the same transaction, the whole table) for minutes. Such rewrites are done
here instead, by :func:`backfill` after :func:`intentd.adapters.postgres.migrate`
(``intentd migrate``, and ``intentd run`` at start-up), each batch in a transaction of
its own that locks only the rows it rewrites, for the time of one short ``UPDATE``.

Guarantees: when :func:`backfill` returns, every terminal intent has its
``terminal_at`` (those that became terminal after migration 0013 got it from its
trigger); a stopped or crashed run is simply run again (it goes on with the rows still
unstamped; stamped rows are never written again). Concurrent runs wait for each other.
"""

from __future__ import annotations

from intentd.adapters.postgres import Connection, Pool, wait_for_advisory_lock
from intentd.domain.status import ALLOWED_MOVES

__all__ = ["BATCH", "TERMINAL_STATUSES", "backfill", "stamp_terminal_at"]

BATCH = 5_000
"""Rows per transaction: about 0.6 s each on 10^6 intents (bench/watch_migration.py),
for which a write to one of its rows waits; reads never do."""
TERMINAL_STATUSES = sorted(status.value for status, moves in ALLOWED_MOVES.items() if not moves)
"""The statuses migration 0013's trigger stamps (a unit test keeps both lists equal)."""
_BACKFILL_LOCK = 0x1A7E_0D01  # advisory lock key held while backfilling
# One batch: the next unstamped terminal intents after $2 in id order (a range of the
# intents_live index, which holds exactly the unstamped rows), stamped with their last
# update: their terminal transition or later (a late payment updates the row), so the
# watch window they get is never shorter. A row stamped meanwhile by the trigger (a
# concurrent update) is left as it is.
_STAMP = """
    WITH batch AS (
        SELECT id FROM intents
         WHERE terminal_at IS NULL AND status = ANY($3::text[]) AND id > $2
         ORDER BY id LIMIT $1
    ), stamped AS (
        UPDATE intents SET terminal_at = updated_at
         WHERE id IN (SELECT id FROM batch) AND terminal_at IS NULL
        RETURNING 1
    )
    SELECT (SELECT max(id) FROM batch) AS last, (SELECT count(*) FROM stamped) AS stamped
"""


async def backfill(pool: Pool) -> dict[str, int]:
    """Run every backfill to its end; return how many rows each one wrote."""
    async with pool.acquire() as conn:
        await wait_for_advisory_lock(conn, _BACKFILL_LOCK)
        try:
            return {"terminal_at": await stamp_terminal_at(conn)}
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _BACKFILL_LOCK)


async def stamp_terminal_at(conn: Connection, *, batch: int = BATCH, after_id: int = 0) -> int:
    """Stamp ``terminal_at`` on the terminal intents without one (ids above
    ``after_id``), ``batch`` rows per transaction (``conn`` must not be in one); return
    how many were stamped."""
    stamped = 0
    while True:
        row = await conn.fetchrow(_STAMP, batch, after_id, TERMINAL_STATUSES)
        assert row is not None
        if row["last"] is None:
            return stamped
        stamped += row["stamped"]
        after_id = row["last"]
