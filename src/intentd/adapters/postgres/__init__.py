"""PostgreSQL connection pool and schema migrations (asyncpg).

Migrations are the numbered SQL files in ``intentd/migrations`` (``NNNN_name.sql``).
:func:`migrate` applies those not yet recorded in ``schema_migrations``, each in its
own transaction, under an advisory lock so that concurrent runs apply each file once.
Running it again is a no-op.

A file whose first line is ``-- intentd: no-transaction`` is applied outside a
transaction instead (for ``CREATE INDEX CONCURRENTLY``, which builds an index without
blocking writes): its statements run one by one, without the statement timeout, and
the version is recorded only after all of them succeeded. Such a file is applied again
from its first statement after a failure, so each statement must be safe to repeat
(``IF NOT EXISTS``, ``OR REPLACE``); before each ``CREATE INDEX CONCURRENTLY IF NOT
EXISTS name``, an index of that name left INVALID by a failed build is dropped, so the
build is done again rather than skipped.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

__all__ = [
    "Connection",
    "Migration",
    "Pool",
    "available_migrations",
    "create_pool",
    "migrate",
    "split_statements",
    "wait_for_advisory_lock",
]

Pool = asyncpg.Pool
Connection = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy
"""A connection of its own or one lent by a :data:`Pool`: what store functions take."""
_MIGRATION_LOCK = 0x1A7E_0D00  # advisory lock key held while migrating
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_NO_TRANSACTION = "-- intentd: no-transaction"
_LONG_STATEMENT = 86_400.0
"""Seconds the client waits for a statement of a no-transaction migration (an index
build on a large table outlasts the pool's ``command_timeout``)."""
_CONCURRENT_INDEX = re.compile(
    r"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.I
)
# What splits a file into statements: comments, quoted text and dollar-quoted bodies
# are skipped whole (their semicolons do not end a statement).
_TOKEN = re.compile(r"--[^\n]*|/\*[\s\S]*?\*/|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|(\$\w*\$)|;")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def transactional(self) -> bool:
        """False for a file marked ``-- intentd: no-transaction`` on its first line."""
        return self.sql.split("\n", 1)[0].strip() != _NO_TRANSACTION


def split_statements(sql: str) -> list[str]:
    """The statements of ``sql`` (without their ``;``), comments kept, empty ones left out."""
    found: list[str] = []
    start = pos = 0
    while match := _TOKEN.search(sql, pos):
        pos = match.end()
        if match.group(1):  # a dollar quote: skip to its closing tag
            closing = sql.find(match.group(1), pos)
            if closing < 0:
                raise ValueError(f"unterminated {match.group(1)} quote")
            pos = closing + len(match.group(1))
        elif match.group() == ";":
            found.append(sql[start : match.start()])
            start = pos
    found.append(sql[start:])
    return [s.strip() for s in found if _has_code(s)]


def _has_code(statement: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in statement.split("\n"))


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


async def migrate(pool: Pool, *, until: int | None = None) -> list[Migration]:
    """Apply pending migrations (those up to version ``until``, None: all); return those
    applied by this call."""
    applied: list[Migration] = []
    async with pool.acquire() as conn:
        await wait_for_advisory_lock(conn, _MIGRATION_LOCK)
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
                if migration.version in done or (until is not None and migration.version > until):
                    continue
                if done and migration.version < max(done):
                    raise RuntimeError(
                        f"migration {migration.version} ({migration.name}) is new, but"
                        f" {max(done)} is already applied: renumber it above {max(done)}"
                    )
                if migration.transactional:
                    async with conn.transaction():
                        await conn.execute(migration.sql)
                        await _record(conn, migration)
                else:
                    await _apply_outside_transaction(conn, migration)
                    await _record(conn, migration)
                applied.append(migration)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK)
    return applied


async def wait_for_advisory_lock(conn: Connection, key: int, poll: float = 0.5) -> None:
    """Take the session advisory lock ``key``, waiting for it between short tries.

    Not ``pg_advisory_lock``: its wait is an open transaction with a snapshot, which a
    ``CREATE INDEX CONCURRENTLY`` of the lock's holder would wait for (a deadlock)."""
    while not await conn.fetchval("SELECT pg_try_advisory_lock($1)", key):  # noqa: ASYNC110
        await asyncio.sleep(poll)


async def _record(conn: Connection, migration: Migration) -> None:
    await conn.execute(
        "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
        migration.version,
        migration.name,
    )


async def _apply_outside_transaction(conn: Connection, migration: Migration) -> None:
    await conn.execute("SET statement_timeout = 0")
    try:
        for statement in split_statements(migration.sql):
            index = _CONCURRENT_INDEX.match(_without_comments(statement))
            if index and await conn.fetchval(
                "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
                index.group(1),
            ):
                await conn.execute(
                    f'DROP INDEX CONCURRENTLY IF EXISTS "{index.group(1)}"', timeout=_LONG_STATEMENT
                )
            await conn.execute(statement, timeout=_LONG_STATEMENT)
    finally:
        await conn.execute("RESET statement_timeout")


def _without_comments(statement: str) -> str:
    return "\n".join(line for line in statement.split("\n") if not line.strip().startswith("--"))
