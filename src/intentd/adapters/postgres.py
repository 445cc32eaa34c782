"""PostgreSQL connection pool and schema migrations (asyncpg).

Migrations are the numbered SQL files in ``intentd/migrations`` (``NNNN_name.sql``).
:func:`migrate` applies those not yet recorded in ``schema_migrations``, each in its
own transaction, under an advisory lock so that concurrent runs apply each file once.
Running it again is a no-op.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

__all__ = ["Connection", "Migration", "Pool", "available_migrations", "create_pool", "migrate"]

Pool = asyncpg.Pool
Connection = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy
"""A connection of its own or one lent by a :data:`Pool`: what store functions take."""
_MIGRATION_LOCK = 0x1A7E_0D00  # advisory lock key held while migrating
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


async def create_pool(
    url: str, *, min_size: int = 1, max_size: int = 10, session_reset: bool = True
) -> Pool:
    """A pool with a statement timeout, so a stuck query fails instead of hanging.

    On release asyncpg rolls back an open transaction and, with ``session_reset``,
    also sends ``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL``: one
    more round trip per acquire. Turn it off only for a pool whose users never leave
    session state behind (session advisory locks, LISTEN, SET, open cursors).
    """
    pool = await asyncpg.create_pool(
        url,
        min_size=min_size,
        max_size=max_size,
        command_timeout=60,
        server_settings={"application_name": "intentd", "statement_timeout": "60000"},
        reset=None if session_reset else _keep_session,
    )
    if pool is None:  # pragma: no cover - asyncpg returns None only without await
        raise RuntimeError("asyncpg returned no pool")
    return pool


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Release without the session reset (the open transaction is still rolled back)."""


def available_migrations() -> list[Migration]:
    """The migrations shipped with the package, in version order.

    Versions are unique; a gap is allowed (numbers are handed out to parallel branches
    before they merge), but a migration is never applied below one already applied
    (:func:`migrate` refuses that).
    """
    found = []
    for entry in resources.files("intentd.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text()))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions) or (versions and versions[0] < 1):
        raise RuntimeError(f"migration versions must be unique and positive, found {versions}")
    return found


async def migrate(pool: Pool) -> list[Migration]:
    """Apply pending migrations; return those applied by this call."""
    applied: list[Migration] = []
    async with pool.acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK)
        try:
            await conn.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version     INTEGER PRIMARY KEY,
                    name        TEXT NOT NULL,
                    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """
            )
            done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
            for migration in available_migrations():
                if migration.version in done:
                    continue
                if done and migration.version < max(done):
                    raise RuntimeError(
                        f"migration {migration.version} ({migration.name}) is new, but"
                        f" {max(done)} is already applied: renumber it above {max(done)}"
                    )
                async with conn.transaction():
                    await conn.execute(migration.sql)
                    await conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                        migration.version,
                        migration.name,
                    )
                applied.append(migration)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK)
    return applied
