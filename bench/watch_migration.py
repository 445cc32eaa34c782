"""Benchmark: what migration 0013 costs the users of ``intents`` on 10^6 intents.

``python -m bench watch-migration [--intents N]`` creates a database of its own,
migrates it to version 12 and loads N intents as ``bench/intent_list.py`` does (93 %
terminal). While a probe reads one intent and updates another in a loop (as the API and
the running version would), it times:

- the old way (one transaction: add the column, stamp every terminal intent, build
  both indexes), then rolls it back: the longest probe is how long the table was locked;
- each index built alone (plain ``CREATE INDEX``, rolled back);
- the new way: migration 0013 (outside a transaction, indexes built concurrently) and
  the batched backfill of ``terminal_at`` (``intentd.adapters.postgres.backfills``).

The database is dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable
from typing import Any

import asyncpg

from bench.intent_list import load
from bench.scratch import scratch_database
from intentd.adapters.postgres import create_pool, migrate
from intentd.adapters.postgres.backfills import BATCH, backfill

_TERMINAL = "('COMPLETED', 'EXPIRED', 'REFUNDED', 'CANCELLED')"
_OLD = [
    "SET LOCAL statement_timeout = 0",
    "ALTER TABLE intents ADD COLUMN terminal_at TIMESTAMPTZ",
    f"UPDATE intents SET terminal_at = updated_at WHERE status IN {_TERMINAL}",
    "CREATE INDEX intents_live ON intents (id) WHERE terminal_at IS NULL",
    "CREATE INDEX intents_ended ON intents (terminal_at, id) WHERE terminal_at IS NOT NULL",
]


async def probed(url: str, action: Awaitable[Any]) -> dict[str, Any]:
    """Run ``action`` while a probe reads and writes the table; the probe's figures."""
    probe = await asyncpg.connect(url)
    task = asyncio.ensure_future(action)
    spent: list[float] = []
    began = time.perf_counter()
    try:
        while not task.done():
            start = time.perf_counter()
            await probe.fetchval("SELECT status FROM intents WHERE id = 1")
            await probe.execute("UPDATE intents SET received = received WHERE id = 2")
            spent.append(time.perf_counter() - start)
            await asyncio.sleep(0.01)
        await task
    finally:
        await probe.close()
    spent.sort()
    return {
        "seconds": round(time.perf_counter() - began, 1),
        "probes": len(spent),
        "probe_p50_ms": round(spent[len(spent) // 2] * 1000, 1),
        "probe_max_ms": round(spent[-1] * 1000, 1),
    }


async def old_way(conn: asyncpg.Connection) -> None:
    tx = conn.transaction()
    await tx.start()
    try:
        for statement in _OLD:
            await conn.execute(statement)
    finally:
        await tx.rollback()


async def index_alone(conn: asyncpg.Connection, statement: str) -> float:
    async with conn.transaction():
        await conn.execute("SET LOCAL statement_timeout = 0")
        await conn.execute("ALTER TABLE intents ADD COLUMN terminal_at TIMESTAMPTZ")
        began = time.perf_counter()
        await conn.execute(statement)
        raise _Rollback(time.perf_counter() - began)


class _Rollback(Exception):
    def __init__(self, spent: float) -> None:
        self.spent = spent


async def main_async(intents: int) -> dict[str, Any]:
    async with scratch_database("migration") as url:
        pool = await create_pool(url, max_size=3)
        try:
            await migrate(pool, until=12)
            result: dict[str, Any] = {"intents": intents, "batch": BATCH}
            conn = await asyncpg.connect(url)  # no command timeout: the old way outlasts it
            try:
                result["load_seconds"] = round(await load(conn, intents, clients=10), 1)
                result["old_one_transaction"] = await probed(url, old_way(conn))
                await conn.execute("SET statement_timeout = 0")
                await conn.execute("VACUUM ANALYZE intents")
                for label, statement in (("live", _OLD[3]), ("ended", _OLD[4])):
                    try:
                        await index_alone(conn, statement)
                    except _Rollback as done:
                        result[f"index_{label}_seconds"] = round(done.spent, 2)
            finally:
                await conn.close()
            result["new_migration"] = await probed(url, migrate(pool))
            result["new_backfill"] = await probed(url, backfill(pool))
            return result
        finally:
            await pool.close()


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench watch-migration")
    parser.add_argument("--intents", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(main_async(args.intents)), indent=2))
