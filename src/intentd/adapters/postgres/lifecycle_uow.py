"""The lifecycle's unit of work and store on PostgreSQL (asyncpg).

:class:`PostgresUnitOfWork` holds the repositories of
:class:`~intentd.lifecycle.ports.UnitOfWork` (``adapters.postgres.lifecycle_repositories``), all
on one connection, so what they write inside :meth:`PostgresUnitOfWork.transaction`
commits together; :class:`PostgresStore` lends one per connection of a pool and
classifies asyncpg's errors (``adapters.postgres.db_failures``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from intentd.adapters.postgres import Connection, Pool, db_failures
from intentd.adapters.postgres.lifecycle_repositories import (
    PostgresActions,
    PostgresDeposits,
    PostgresEvents,
    PostgresHolds,
    PostgresIntents,
    PostgresOutbox,
    PostgresWatches,
)
from intentd.lifecycle.failures import Failure

__all__ = ["PostgresStore", "PostgresUnitOfWork"]


class PostgresUnitOfWork:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.intents = PostgresIntents(conn)
        self.deposits = PostgresDeposits(conn)
        self.actions = PostgresActions(conn)
        self.holds = PostgresHolds(conn)
        self.watches = PostgresWatches(conn)
        self.outbox = PostgresOutbox(conn)
        self.events = PostgresEvents(conn)

    def transaction(self) -> AbstractAsyncContextManager[Any]:
        return self.conn.transaction()


class PostgresStore:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[PostgresUnitOfWork]:
        async with self._pool.acquire() as conn:
            yield PostgresUnitOfWork(conn)

    async def ping(self) -> None:
        await self._pool.fetchval("SELECT 1")

    def classify(self, exc: BaseException) -> Failure:
        return db_failures.classify(exc)
