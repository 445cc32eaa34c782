"""Benchmark: the watched set's reads with a watch window (migration 0013) on 10^6 intents.

``python -m bench watched-set [--intents N] [--recent-days D] [--plans]`` creates a
database of its own, migrates it and loads N intents as ``bench/intent_list.py`` does
(one every 2.6 s of ``created_at``, about a month for 10^6; 93 % of them terminal, each
ended ten minutes after its creation). The watch window is set so that the intents that
ended in the last D days (default 7) are in it. It then times, through the poller's own
source (``PostgresOpenNativeIntents``) and ``WatchedIntents``: the first load (the live
intents, the recent ones, the newest ids), a steady refresh (nothing new), one sweep of
a minute of intents leaving the window, and a first load without a window (every
intent, as before 0013). With ``--plans``, the plans (``EXPLAIN ANALYZE``) of the reads.
The database is dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from datetime import timedelta
from typing import Any

from bench.intent_list import START, load
from bench.scratch import scratch_database
from intentd.adapters.postgres import Pool, create_pool, migrate
from intentd.adapters.postgres.native_intents import PostgresOpenNativeIntents
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.indexer.watched import REORG_MARGIN, SWEEP_STEP

RETENTION = timedelta(days=30)
_LIVE = (
    "SELECT id, intent_address FROM intents WHERE terminal_at IS NULL AND id > 0"
    " ORDER BY id LIMIT 50000"
)
_RECENT = (
    "SELECT id, intent_address FROM intents WHERE terminal_at IS NOT NULL"
    " AND (terminal_at, id) > ($1::timestamptz, 0) ORDER BY terminal_at, id LIMIT 50000"
)
_SWEEP = (
    "SELECT id, intent_address FROM intents WHERE terminal_at IS NOT NULL"
    " AND (terminal_at, id) > ($1::timestamptz - interval '11 minutes', 0)"
    " AND terminal_at <= $1::timestamptz ORDER BY terminal_at, id LIMIT 50000"
)
_NEWEST = "SELECT id, intent_address FROM intents WHERE id > $1 ORDER BY id LIMIT 50000"


async def timed(action: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    result = await action
    return round((time.perf_counter() - began) * 1000, 1), result


async def measure(pool: Pool, intents: int, recent_days: int, plans: bool) -> dict[str, Any]:
    last_end = START + timedelta(seconds=intents * 2.6 + 600)
    chain_time = last_end - timedelta(days=recent_days) + RETENTION + REORG_MARGIN
    cutoff = chain_time - RETENTION - REORG_MARGIN
    far = chain_time + timedelta(days=365)
    result: dict[str, Any] = {"cutoff": cutoff.isoformat()}
    windowed = WatchedIntents(
        PostgresOpenNativeIntents(pool, "BASE_TESTNET"), retention=RETENTION, wall_clock=lambda: far
    )
    result["first_load_ms"], _ = await timed(windowed.refresh(chain_time))
    result["watched"] = len(windowed)
    result["steady_refresh_ms"], _ = await timed(windowed.refresh(chain_time))
    later = chain_time + SWEEP_STEP
    result["sweep_one_minute_ms"], dropped = await timed(windowed.refresh(later))
    result["sweep_dropped"] = dropped
    everything = WatchedIntents(PostgresOpenNativeIntents(pool, "BASE_TESTNET"))
    result["first_load_without_window_ms"], _ = await timed(everything.refresh(chain_time))
    result["watched_without_window"] = len(everything)
    if plans:
        newest = int(await pool.fetchval("SELECT max(id) FROM intents")) - 1000
        reads = {
            "live_page": (_LIVE, ()),
            "recent_page": (_RECENT, (cutoff,)),
            "sweep_one_minute": (_SWEEP, (cutoff,)),
            "newest_ids": (_NEWEST, (newest,)),
        }
        result["plans"] = {
            label: [r[0] for r in await pool.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {query}", *args)]
            for label, (query, args) in reads.items()
        }
    return result


async def main_async(intents: int, recent_days: int, plans: bool) -> dict[str, Any]:
    async with scratch_database("watched") as url:
        pool = await create_pool(url, max_size=2)
        try:
            await migrate(pool)
            async with pool.acquire() as conn:
                loaded = await load(conn, intents, clients=10)
                # The trigger stamped the load's time; each intent ended 10 min after creation.
                await conn.execute("SET statement_timeout = 0")
                began = time.perf_counter()
                for first in range(1, intents + 1, 100_000):
                    await conn.execute(
                        "UPDATE intents SET terminal_at = created_at + interval '10 minutes'"
                        " WHERE terminal_at IS NOT NULL AND id BETWEEN $1 AND $2",
                        first,
                        first + 99_999,
                    )
                stamped = round(time.perf_counter() - began, 1)
                await conn.execute("VACUUM ANALYZE intents")
            result = {
                "intents": intents,
                "recent_days": recent_days,
                "load_seconds": round(loaded, 1),
                "terminal_at_update_seconds": stamped,
            }
            result |= await measure(pool, intents, recent_days, plans)
            return result
        finally:
            await pool.close()


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench watched-set")
    parser.add_argument("--intents", type=int, default=1_000_000)
    parser.add_argument("--recent-days", type=int, default=7)
    parser.add_argument("--plans", action="store_true")
    args = parser.parse_args(argv)
    result = asyncio.run(main_async(args.intents, args.recent_days, args.plans))
    print(json.dumps(result, indent=2))
