"""The watch window on real PostgreSQL: ``intents.terminal_at`` (migration 0013) and the
watched set's reads through ``PostgresOpenNativeIntents``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.support import new_intent

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.native_intents import PostgresOpenNativeIntents
from intentd.contract.record import IntentRow
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.indexer.watched import REORG_MARGIN, SWEEP_STEP
from intentd.settings import Settings

RETENTION = timedelta(days=30)


async def terminal_at(pool: Pool, row: IntentRow) -> datetime | None:
    value: datetime | None = await pool.fetchval(
        "SELECT terminal_at FROM intents WHERE id = $1", row.id
    )
    return value


async def test_terminal_at_is_stamped_once_when_an_intent_becomes_terminal(
    pool: Pool, settings: Settings
) -> None:
    row = await new_intent(pool, settings)
    assert await terminal_at(pool, row) is None
    await pool.execute("UPDATE intents SET status = 'FUNDED' WHERE id = $1", row.id)
    assert await terminal_at(pool, row) is None  # live
    await pool.execute("UPDATE intents SET status = 'REFUNDING' WHERE id = $1", row.id)
    assert await terminal_at(pool, row) is None  # a refund in flight is live
    await pool.execute("UPDATE intents SET status = 'REFUNDED' WHERE id = $1", row.id)
    stamped = await terminal_at(pool, row)
    assert stamped is not None
    # A later change of the row (a late payment recorded) does not move it.
    await pool.execute("UPDATE intents SET received = received + 1 WHERE id = $1", row.id)
    assert await terminal_at(pool, row) == stamped


async def test_the_set_loads_the_window_and_drops_intents_as_they_leave_it(
    pool: Pool, settings: Settings
) -> None:
    live, recent, old, later = [await new_intent(pool, settings) for _ in range(4)]
    ended = "UPDATE intents SET status = 'COMPLETED', terminal_at = $2 WHERE id = $1"
    now = await pool.fetchval("SELECT now()")
    await pool.execute(ended, recent.id, now - timedelta(days=29))
    await pool.execute(ended, old.id, now - timedelta(days=31) - REORG_MARGIN)
    source = PostgresOpenNativeIntents(pool, "BASE_TESTNET")
    far = now + timedelta(days=400)  # the wall clock; chain times below lead
    watched = WatchedIntents(source, retention=RETENTION, page=2, wall_clock=lambda: far)

    def watching() -> set[str]:
        rows = (live, recent, old, later)
        return {r.intent_address for r in rows if watched.addresses.contains_hex(r.intent_address)}

    await watched.refresh(now)
    assert watching() == {live.intent_address, recent.intent_address, later.intent_address}
    since_ever = await source.ended_intents(None, now - timedelta(days=30), 1000)
    assert old.id in {r.id for r in since_ever} and recent.id not in {r.id for r in since_ever}
    await pool.execute("UPDATE intents SET status = 'EXPIRED' WHERE id = $1", later.id)
    created = await new_intent(pool, settings)  # joins while the poller runs
    await watched.refresh(now + timedelta(days=1, minutes=1) + REORG_MARGIN + SWEEP_STEP)
    assert watching() == {live.intent_address, later.intent_address}
    assert watched.addresses.contains_hex(created.intent_address)
    # 30 days after it expired (in chain time), `later` leaves too; the live one never.
    await watched.refresh(datetime.now(UTC) + RETENTION + REORG_MARGIN + 2 * SWEEP_STEP)
    assert watching() == {live.intent_address}
