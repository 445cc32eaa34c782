"""Migration 0013 on a table that already holds many intents: it never blocks the
table's readers and writers for long, and the backfill that follows stamps every
terminal intent, resumes after a stop, and leaves no terminal intent unwatched."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from intentd.adapters.postgres import Pool, create_pool, migrate
from intentd.adapters.postgres.backfills import backfill, stamp_terminal_at
from intentd.adapters.postgres.native_intents import PostgresOpenNativeIntents
from intentd.indexer.watch_refresh import WatchedIntents

INTENTS = 50_000
LIVE_ID = 3  # id % 10 == 3: PENDING below
# One intent every minute, starting 60 days ago; 90 % terminal, each last updated
# ten minutes after it was created.
_LOAD = """
INSERT INTO intents (client_id, request_hash, initial_amount, source_chain,
    destination_chain, token_in, token_out, token_out_decimals, asset_token_symbol,
    asset_token_decimals, total_due, amount_out, address_index, intent_address,
    recipient, refund_address, status, funding_status, expires_at, created_at, updated_at)
SELECT gen_random_uuid(), 'h', '10', 'BASE_TESTNET', 'ARBITRUM_TESTNET', '0x', '0x', 6,
    'USDC', 6, 10, 10, n, '0x' || lpad(to_hex(n), 40, '0'), '0x', '0x',
    CASE n % 10 WHEN 3 THEN 'PENDING' WHEN 4 THEN 'EXPIRED' ELSE 'COMPLETED' END,
    'NONE', t + interval '1 hour', t, t + interval '10 minutes'
FROM generate_series(1, $1::bigint) AS n,
    LATERAL (SELECT now() - interval '60 days' + make_interval(mins => n::int) AS t) AS times
"""
_TERMINAL_UNSTAMPED = (
    "SELECT count(*) FROM intents WHERE terminal_at IS NULL AND status <> 'PENDING'"
)


@pytest.fixture
async def loaded(infra: dict[str, str]) -> AsyncIterator[Pool]:
    """A database of its own at schema version 12, holding ``INTENTS`` intents."""
    base = infra["INTENTD_DATABASE_URL"].rpartition("/")[0]
    name = f"intentd_test_{os.getpid()}_{secrets.token_hex(3)}"
    admin = await asyncpg.connect(f"{base}/postgres")
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        pool = await create_pool(f"{base}/{name}", max_size=4)
        try:
            await migrate(pool, until=12)
            await pool.execute(_LOAD, INTENTS)
            await pool.execute("VACUUM ANALYZE intents")
            yield pool
        finally:
            await pool.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def test_migrating_never_blocks_reads_and_writes_of_intents(loaded: Pool) -> None:
    """The API, the pollers and the running version keep using the table: a read and
    a write with a short lock timeout succeed all along the migration and backfill."""
    probe = await loaded.acquire()
    failures: list[str] = []
    probes = 0

    async def upgrade() -> None:
        await migrate(loaded)
        await backfill(loaded)

    try:
        await probe.execute("SET lock_timeout = '200ms'")
        upgrading = asyncio.create_task(upgrade())
        while not upgrading.done():
            began = time.perf_counter()
            try:
                await probe.fetchval("SELECT status FROM intents WHERE id = 1")
                await probe.execute("UPDATE intents SET received = received WHERE id = $1", LIVE_ID)
            except asyncpg.LockNotAvailableError as e:
                failures.append(f"{e} after {time.perf_counter() - began:.2f} s")
            probes += 1
            await asyncio.sleep(0.01)
        await upgrading
    finally:
        await loaded.release(probe)
    assert failures == []
    assert probes > 5  # the probes ran while it migrated
    assert await loaded.fetchval(_TERMINAL_UNSTAMPED) == 0


def address(intent_id: int) -> str:
    return "0x" + f"{intent_id:x}".rjust(40, "0")


async def test_the_backfill_stamps_every_terminal_intent_and_resumes_after_a_crash(
    loaded: Pool,
) -> None:
    await migrate(loaded)
    assert await loaded.fetchval(_TERMINAL_UNSTAMPED) == INTENTS * 9 // 10
    # Until it is stamped, an intent that ended two months ago is watched as a live one
    # is: a window of 30 days drops no unstamped intent.
    now = datetime.now(UTC)
    source = PostgresOpenNativeIntents(loaded, "BASE_TESTNET")
    before = WatchedIntents(source, retention=timedelta(days=30))
    await before.refresh(now)
    assert len(before) == INTENTS
    # A late payment updates a terminal intent before the backfill: the trigger stamps it.
    await loaded.execute("UPDATE intents SET received = 1 WHERE id = 2")
    by_trigger = await loaded.fetchval("SELECT terminal_at FROM intents WHERE id = 2")
    assert by_trigger > now - timedelta(minutes=1)
    # A first run dies part way.
    conn = await loaded.acquire()
    running = asyncio.create_task(stamp_terminal_at(conn, batch=500))
    stamped = "SELECT id, xmin::text AS xmin FROM intents WHERE terminal_at IS NOT NULL"
    while len(first := await loaded.fetch(stamped)) < 5_000:  # noqa: ASYNC110 (a table)
        await asyncio.sleep(0.01)
    await loaded.execute("SELECT pg_terminate_backend($1)", conn.get_server_pid())
    with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError, OSError)):
        await running
    await loaded.release(conn)
    assert 0 < await loaded.fetchval(_TERMINAL_UNSTAMPED) < INTENTS * 9 // 10
    # Run again: it goes on with the unstamped ones and rewrites none of the others.
    assert (await backfill(loaded))["terminal_at"] < INTENTS * 9 // 10
    assert await loaded.fetchval(_TERMINAL_UNSTAMPED) == 0
    assert (
        await loaded.fetchval(
            "SELECT count(*) FROM intents WHERE status = 'PENDING' AND terminal_at IS NOT NULL"
        )
        == 0
    )
    xmins = {r["id"]: r["xmin"] for r in await loaded.fetch(stamped)}
    assert all(xmins[r["id"]] == r["xmin"] for r in first)
    assert await loaded.fetchval("SELECT terminal_at FROM intents WHERE id = 2") == by_trigger
    assert (
        await loaded.fetchval(
            "SELECT count(*) FROM intents WHERE id <> 2 AND terminal_at <> updated_at"
        )
        == 0
    )
    assert (await backfill(loaded))["terminal_at"] == 0
    # Stamped, the intents ended two months ago leave the window; the rest stay.
    after = WatchedIntents(source, retention=timedelta(days=30))
    await after.refresh(now)
    assert not after.addresses.contains_hex(address(1))
    assert after.addresses.contains_hex(address(2))  # stamped just now by the trigger
    assert after.addresses.contains_hex(address(LIVE_ID))
    assert after.addresses.contains_hex(address(INTENTS))  # ended ten days ago
    # A set loaded before the backfill keeps the intents it stamped (never dropped).
    await before.refresh(now + timedelta(hours=1))
    assert before.addresses.contains_hex(address(1))


async def test_a_failed_concurrent_index_build_is_done_again(loaded: Pool) -> None:
    await migrate(loaded, until=13)
    # As a build that failed would: an INVALID index of the name, the version unrecorded.
    await loaded.execute("DELETE FROM schema_migrations WHERE version = 13")
    await loaded.execute("DROP INDEX intents_ended")
    with pytest.raises(asyncpg.UniqueViolationError):
        await loaded.execute("CREATE UNIQUE INDEX CONCURRENTLY intents_ended ON intents (status)")
    valid = "SELECT indisvalid FROM pg_index WHERE indexrelid = 'intents_ended'::regclass"
    assert await loaded.fetchval(valid) is False
    assert [m.version for m in await migrate(loaded, until=13)] == [13]
    assert await loaded.fetchval(valid) is True
    definition = await loaded.fetchval("SELECT pg_get_indexdef('intents_ended'::regclass)")
    assert "(terminal_at, id) WHERE (terminal_at IS NOT NULL)" in definition
