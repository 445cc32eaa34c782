"""What the API's way to PostgreSQL costs, and how soon it tells an outage (issue 18).

``python -m bench api-database [--uses N] [--admissions N] [--outages N]`` (needs
``make infra-up``), on a scratch database:

- **per use**: ``N`` times ``SELECT 1`` on a pooled connection, bare (acquire, query,
  release) and through ``api.connections.Database.connection`` (its bounds and error
  mapping); microseconds per use each way, and the difference;
- **trigger admission**: ``N`` calls admitted and given back
  (``adapters.postgres.trigger_runs``: the one round trip trigger-processing now makes before
  reading the chain, and the delete after it), milliseconds per call (p50, p99);
- **outages**: the database behind a ``TcpFaultProxy`` and a process's
  ``supervision.Health`` probing it as the API needs (every second,
  ``api.connections.database_cadence``): for each of ``N`` cuts and ``N`` stalls,
  the seconds from the fault to "down" (the process not ready) and from the restore
  to "up" (ready again).

Figures are printed as JSON, nothing asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import orjson
from pydantic import SecretStr

from bench.poller_env import bench_database, infra_env
from bench.scratch import CONFIG
from intentd.adapters.library_logs import QuietLibraryLogs
from intentd.adapters.postgres import create_pool, trigger_runs
from intentd.adapters.probes import PostgresProbe
from intentd.api.connections import Database, database_cadence
from intentd.settings import load_settings
from intentd.supervision import POSTGRESQL, Health
from intentd_dev.fault_proxy import TcpFaultProxy, proxy_for, through_proxy


async def per_use(url: str, uses: int) -> dict[str, float]:
    """The best of three rounds each way, the two ways taking turns (after a warm-up)."""
    settings = load_settings(CONFIG)
    pool = await create_pool(url, max_size=2, session_reset=False)
    database = Database.of(settings, pool)

    async def bare(count: int) -> float:
        began = time.perf_counter()
        for _ in range(count):
            conn = await pool.acquire(timeout=2)
            try:
                await conn.fetchval("SELECT 1")
            finally:
                await pool.release(conn)
        return (time.perf_counter() - began) / count * 1e6

    async def bounded(count: int) -> float:
        began = time.perf_counter()
        for _ in range(count):
            async with database.connection() as conn:
                await conn.fetchval("SELECT 1")
        return (time.perf_counter() - began) / count * 1e6

    try:
        await bare(uses // 10)
        await bounded(uses // 10)
        rounds = [(await bare(uses), await bounded(uses)) for _ in range(3)]
    finally:
        await pool.close()
    best_bare = min(r[0] for r in rounds)
    best_bounded = min(r[1] for r in rounds)
    return {
        "bare_us": round(best_bare, 1),
        "database_connection_us": round(best_bounded, 1),
        "added_us": round(best_bounded - best_bare, 1),
    }


async def admissions(url: str, count: int) -> dict[str, float]:
    pool = await create_pool(url, max_size=2, session_reset=False)
    took: list[float] = []
    try:
        async with pool.acquire() as conn:
            for intent in range(1, count + 1):
                began = time.perf_counter()
                admitted = await trigger_runs.admit(
                    conn, intent, "client:bench", cooldown=10, cap=4, lease=40
                )
                assert admitted.run_id is not None
                await trigger_runs.finish(conn, admitted.run_id)
                took.append((time.perf_counter() - began) * 1e3)
    finally:
        await pool.close()
    took.sort()
    return {
        "calls": count,
        "admit_and_give_back_ms_p50": round(statistics.median(took), 3),
        "admit_and_give_back_ms_p99": round(took[int(len(took) * 0.99) - 1], 3),
    }


async def outages(url: str, count: int) -> dict[str, Any]:
    async with proxy_for(url, 5432) as proxy:
        return await cut_and_stalled(proxy, through_proxy(url, proxy), count)


async def cut_and_stalled(proxy: TcpFaultProxy, through: str, count: int) -> dict[str, Any]:
    """``count`` cuts and stalls of the database behind ``proxy`` (reached at
    ``through``): how long the health took to see each and its end."""
    settings = load_settings(CONFIG)
    settings = settings.model_copy(
        update={
            "database": settings.database.model_copy(update={"url": SecretStr(through)}),
            "api": settings.api.model_copy(update={"db_timeout": 2.0}),
        }
    )
    pool = await create_pool(through, max_size=2, session_reset=False)
    heard: list[bool] = []
    changed = asyncio.Event()

    def hear(available: bool) -> None:
        heard.append(available)
        changed.set()

    async def until_heard(available: bool) -> None:
        while not heard or heard[-1] is not available:
            changed.clear()
            await changed.wait()

    health = Health()
    cadence = database_cadence(settings)
    probe = PostgresProbe(through, timeout=cadence.timeout)
    health.watch(POSTGRESQL, probe, cadence=cadence)
    health.listen(POSTGRESQL, hear)
    quiet = QuietLibraryLogs(health)  # as a process does
    quiet.install()
    stop = asyncio.Event()
    watching = asyncio.create_task(health.run(stop))
    found: dict[str, list[float]] = {"cut": [], "stall": []}
    back: dict[str, list[float]] = {"cut": [], "stall": []}
    try:
        for _ in range(count):
            for fault in ("cut", "stall"):
                began = time.perf_counter()
                if fault == "cut":
                    await proxy.cut()
                else:
                    proxy.stall()
                await until_heard(False)
                found[fault].append(time.perf_counter() - began)
                await asyncio.sleep(1.0)
                began = time.perf_counter()
                await proxy.restore()
                await until_heard(True)
                back[fault].append(time.perf_counter() - began)
    finally:
        stop.set()
        await watching
        await probe.close()
        quiet.remove()
        await pool.close()
    return {
        fault: {
            "outages": count,
            "seconds_to_not_ready": [round(s, 2) for s in found[fault]],
            "seconds_to_ready_again": [round(s, 2) for s in back[fault]],
        }
        for fault in ("cut", "stall")
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    async with bench_database(infra_env(), args.admissions) as url:
        return {
            "per_use": await per_use(url, args.uses),
            "trigger_admission": await admissions(url, args.admissions),
            "outages (probe every 1 s, db_timeout 2 s)": await outages(url, args.outages),
        }


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench api-database")
    parser.add_argument("--uses", type=int, default=20_000)
    parser.add_argument("--admissions", type=int, default=2_000)
    parser.add_argument("--outages", type=int, default=3)
    args = parser.parse_args(argv)
    print(orjson.dumps(asyncio.run(main_async(args)), option=orjson.OPT_INDENT_2).decode())
