"""A database of its own for one benchmark run: created empty, dropped at the end."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from bench.intent_list import CONFIG
from intentd.settings import load_settings

__all__ = ["scratch_database"]


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
