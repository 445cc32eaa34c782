"""The API's one way to PostgreSQL: a pooled connection, every wait bounded, failures as 503s.

:meth:`Database.connection` lends a connection of the pool for one piece of a
request's work:

- while the process's :class:`~intentd.supervision.Health` knows PostgreSQL is down
  (its probe failed, or a role of the process met its outage), it answers 503
  ``database_unavailable`` at once (no wait on the pool);
- it waits at most ``api.db_acquire_timeout`` for a connection. Past it, with every
  connection of the pool open and lent out, the pool is *busy*: 503
  ``database_busy``, before anything of the request was done. Past it with room in
  the pool (the wait was for a new connection that did not open), it is 503
  ``database_unavailable``;
- the work done with it may take at most ``api.db_timeout`` (a stalled server);
- a connection refused, reset or closed, or an answer not in time, is 503
  ``database_unavailable`` (with ``Retry-After``, ``problems.database_unavailable``),
  told to the health (:meth:`~intentd.supervision.Health.missed`: counted, and the
  probe asked at once: one broken connection is not an outage, the probe decides),
  never a 500 and never a traceback. A broken connection is dropped, not waited for.

The API needs PostgreSQL watched closely (:func:`database_cadence`): probed every
second, each probe bounded by ``api.db_timeout``, so it is answered 503 at once, and
not ready, from a failed probe until an answered one (about a second after the
database is back). Which errors mean "the database is away" is
``adapters.postgres.db_failures``'s classification (``UNAVAILABLE``). Any other error passes
unchanged. A write that failed this way may have been committed all the same; a
create is safe to retry with its ``Idempotency-Key`` (``api.intents.writes``). No API
path waits for a connection or an answer without a bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from intentd.adapters.postgres import Connection, Pool, db_failures
from intentd.api.problems import ApiProblem, database_busy, database_unavailable
from intentd.backoff import Backoff
from intentd.settings import Settings
from intentd.supervision import POSTGRESQL, Cadence, Health

__all__ = ["PROBE_EVERY", "PROBE_GAP", "Database", "database_away", "database_cadence"]

PROBE_EVERY = 1.0
"""Seconds between two probes of PostgreSQL, answered or not (a request's failure asks
sooner)."""
PROBE_GAP = 0.1
"""Seconds at least between two probes, however many requests fail."""


def database_cadence(settings: Settings) -> Cadence:
    """How closely the API needs PostgreSQL probed: every :data:`PROBE_EVERY` seconds
    (while it is down too), each probe bounded by ``api.db_timeout``."""
    return Cadence(
        every=PROBE_EVERY,
        timeout=settings.api.db_timeout,
        retry=Backoff(PROBE_EVERY, factor=1.0, cap=PROBE_EVERY),
        min_gap=PROBE_GAP,
    )


def database_away(exc: BaseException) -> bool:
    """Whether ``exc`` (raised while using the database) means it could not be
    reached, went away or did not answer in time."""
    return not isinstance(exc, ApiProblem) and db_failures.unavailable(exc)


class Database:
    """The pool of the API process with its bounds and the process's health."""

    def __init__(
        self,
        pool: Pool,
        health: Health,
        *,
        acquire_timeout: float,
        answer_timeout: float,
    ) -> None:
        self.pool = pool
        self.health = health
        self.acquire_timeout = acquire_timeout
        self.answer_timeout = answer_timeout

    @classmethod
    def of(cls, settings: Settings, pool: Pool, *, health: Health | None = None) -> Database:
        """``pool`` with the bounds of ``settings.api``, and ``health`` (by default one
        of its own that watches nothing: the database is never known away)."""
        api = settings.api
        return cls(
            pool,
            health if health is not None else Health(),
            acquire_timeout=api.db_acquire_timeout,
            answer_timeout=api.db_timeout,
        )

    @property
    def away(self) -> bool:
        """PostgreSQL is known down (a probe failed and none answered since, or a role
        of the process met its outage)."""
        return self.health.is_down(POSTGRESQL)

    @asynccontextmanager
    async def connection(
        self, *, busy: Callable[[], Exception] = database_busy
    ) -> AsyncIterator[Connection]:
        """A connection for at most ``answer_timeout`` seconds of work; ``busy`` makes
        the exception for a pool busy past ``acquire_timeout``."""
        if self.away:
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
        away before it asked), told to the health."""
        self.health.missed(POSTGRESQL, exc)
        return database_unavailable()
