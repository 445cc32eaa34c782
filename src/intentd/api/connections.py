"""The API's one way to PostgreSQL: a pooled connection, every wait bounded, failures as 503s.

:meth:`Database.connection` lends a connection of the pool for one piece of a
request's work:

- while the :class:`~intentd.api.outage.DatabaseWatch` knows the database is away,
  it answers 503 ``database_unavailable`` at once (no wait on the pool);
- it waits at most ``api.db_acquire_timeout`` for a connection. Past it, with every
  connection of the pool open and lent out, the pool is *busy*: 503
  ``database_busy``, before anything of the request was done. Past it with room in
  the pool (the wait was for a new connection that did not open), it is 503
  ``database_unavailable``;
- the work done with it may take at most ``api.db_timeout`` (a stalled server);
- a connection refused, reset or closed, or an answer not in time, is 503
  ``database_unavailable`` (with ``Retry-After``, ``problems.database_unavailable``),
  told to the watch (which then probes at once), never a 500 and never a traceback.
  A broken connection is dropped, not waited for.

Which errors mean "the database is away" is ``adapters.db_failures``'s
classification (``UNAVAILABLE``). Any other error passes unchanged. A write that
failed this way may have been committed all the same; a create is safe to retry with
its ``Idempotency-Key`` (``api.intent_writes``). No API path waits for a connection
or an answer without a bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Protocol

from intentd.adapters import db_failures
from intentd.adapters.db_probe import ConnectionProbe
from intentd.adapters.postgres import Connection, Pool
from intentd.api.outage import DatabaseWatch, describe
from intentd.api.problems import ApiProblem, database_busy, database_unavailable
from intentd.settings import Settings

__all__ = ["Database", "Watch", "database_away", "watch_of"]


class Watch(Protocol):
    """What ``Database`` needs of the process's view of PostgreSQL
    (:class:`~intentd.api.outage.DatabaseWatch`)."""

    @property
    def away(self) -> bool:
        """The database is known away (a probe failed, none answered since)."""
        ...

    def failed(self, error: str | None) -> None:
        """A request found it away (``error`` None: refused because known away)."""
        ...


def database_away(exc: BaseException) -> bool:
    """Whether ``exc`` (raised while using the database) means it could not be
    reached, went away or did not answer in time."""
    return not isinstance(exc, ApiProblem) and db_failures.unavailable(exc)


def watch_of(
    settings: Settings, *, on_change: Callable[[bool], None] | None = None
) -> DatabaseWatch:
    """A watch probing ``settings.database.url`` within ``api.db_timeout`` (run its
    ``run()`` to probe; ``on_change`` hears the database go away and come back)."""
    url = settings.database.url.get_secret_value()
    probe = ConnectionProbe(url, within=settings.api.db_timeout)
    return DatabaseWatch(probe, on_change=on_change)


class Database:
    """The pool of the API process with its bounds and its watch."""

    def __init__(
        self,
        pool: Pool,
        watch: Watch,
        *,
        acquire_timeout: float,
        answer_timeout: float,
    ) -> None:
        self.pool = pool
        self.watch = watch
        self.acquire_timeout = acquire_timeout
        self.answer_timeout = answer_timeout

    @classmethod
    def of(cls, settings: Settings, pool: Pool, *, watch: Watch | None = None) -> Database:
        """``pool`` with the bounds of ``settings.api``, and ``watch`` (by default one
        made by :func:`watch_of`, not running)."""
        api = settings.api
        return cls(
            pool,
            watch if watch is not None else watch_of(settings),
            acquire_timeout=api.db_acquire_timeout,
            answer_timeout=api.db_timeout,
        )

    @asynccontextmanager
    async def connection(
        self, *, busy: Callable[[], Exception] = database_busy
    ) -> AsyncIterator[Connection]:
        """A connection for at most ``answer_timeout`` seconds of work; ``busy`` makes
        the exception for a pool busy past ``acquire_timeout``."""
        if self.watch.away:
            raise self.unavailable(None)
        try:
            conn = await self.pool.acquire(timeout=self.acquire_timeout)
        except TimeoutError:
            if self.pool.get_size() < self.pool.get_max_size():
                raise self.unavailable(
                    TimeoutError(f"no new connection within {self.acquire_timeout:g} s")
                ) from None
            raise busy() from None
        except Exception as exc:
            if not database_away(exc):
                raise
            raise self.unavailable(exc) from None
        broken = False
        try:
            async with asyncio.timeout(self.answer_timeout):
                yield conn
        except Exception as exc:
            if not database_away(exc):
                raise
            broken = True
            raise self.unavailable(exc) from None
        finally:
            # A broken connection is closed at once: asyncpg would wait for the
            # cancellation of its statement, which a stalled server never confirms.
            try:
                await self.pool.release(conn, timeout=0 if broken else None)
            except Exception as exc:
                if not database_away(exc):
                    raise

    def unavailable(self, exc: BaseException | None) -> ApiProblem:
        """The 503 for a request that found the database away (``exc``; None: known
        away before it asked), told to the watch."""
        self.watch.failed(describe(exc) if exc is not None else None)
        return database_unavailable()
