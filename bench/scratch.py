"""A database of its own for one benchmark run: created empty, dropped at the end."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from intentd.adapters.postgres import Pool, create_pool, migrate
from intentd.settings import load_settings

__all__ = ["CONFIG", "scratch_database", "scratch_pool"]

CONFIG = Path(__file__).resolve().parent.parent / "config" / "local.toml"
"""The settings the benchmarks run with (``make infra-up``'s database and broker)."""


@asynccontextmanager
async def scratch_database(label: str) -> AsyncIterator[str]:
    """The URL of a new, empty database ``intentd_bench_<label>_<random>`` on the
    server of ``config/local.toml``; dropped (connections closed) on exit."""
    base = load_settings(CONFIG).database.url.get_secret_value().rpartition("/")[0]
    name = f"intentd_bench_{label}_{secrets.token_hex(3)}"
    admin = await asyncpg.connect(base + "/postgres")
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{base}/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@asynccontextmanager
async def scratch_pool(label: str, max_size: int = 2) -> AsyncIterator[tuple[str, Pool]]:
    """A pool of at most ``max_size`` connections on a new, migrated scratch database
    (:func:`scratch_database`), and its URL; the pool closed and the database dropped
    on exit."""
    async with scratch_database(label) as url:
        pool = await create_pool(url, max_size=max_size)
        try:
            await migrate(pool)
            yield url, pool
        finally:
            await pool.close()
