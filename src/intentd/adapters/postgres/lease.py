"""A lease: a PostgreSQL session advisory lock held on a connection of its own.

The lock is the two-key advisory lock ``(lock_class, hashtext(name))``; it is held
as long as the session of the connection that took it lives, so a process that dies
or loses its connection loses the lease and a standby can take it.

Guarantees:

- The connection goes back to the pool on every path: lock not granted, ``stop``,
  an error or a cancellation while acquiring, and :meth:`Lease.release`.
- A connection whose lock state is unknown (an error or a cancellation between
  asking for the lock and knowing the answer, or a failed unlock) is terminated
  before it goes back, so its session, and the lock with it, ends: a pool never
  hands out a connection that still holds a lease.
- A connection PostgreSQL or the network dropped (asyncpg then takes it back itself)
  took its session and the lock with it: acquiring raises the error that dropped it,
  never asyncpg's ``InterfaceError`` about a connection already released
  (``adapters.postgres.held_connections``); releasing such a lease is done, without error.
- :meth:`Lease.check` raises :class:`LeaseLost` unless the lock's session answers.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.held_connections import give_back, released
from intentd.wait import wait_any

__all__ = ["Lease", "LeaseLost"]

log = structlog.get_logger()

_TRY_LOCK = "SELECT pg_try_advisory_lock($1, hashtext($2))"
_UNLOCK = "SELECT pg_advisory_unlock($1, hashtext($2))"
_CHECK_SECONDS = 10.0


class LeaseLost(Exception):
    """The session that holds the lease is gone or does not answer: stop at once."""


class Lease:
    """The lease ``(lock_class, name)``; ``holder`` names who takes it, in logs."""

    def __init__(self, pool: Pool, lock_class: int, name: str, *, holder: str) -> None:
        self._pool = pool
        self._class = lock_class
        self._name = name
        self._holder = holder
        self._conn: Any = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    @property
    def connection(self) -> Any:
        """The connection holding the lock (to LISTEN on, say); only while held."""
        if self._conn is None:
            raise LeaseLost(f"the lease of {self._name} is not held")
        return self._conn

    async def try_acquire(self) -> bool:
        """Take the lease if it is free; True if it is held now."""
        if self._conn is not None:
            return True
        return await self._acquire(None, retry_every=0.0)

    async def acquire(self, stop: asyncio.Event, *, retry_every: float = 1.0) -> bool:
        """Wait until the lease is held, asking every ``retry_every`` seconds; False if
        ``stop`` was set first."""
        if self._conn is not None:
            return True
        return await self._acquire(stop, retry_every=retry_every)

    async def _acquire(self, stop: asyncio.Event | None, *, retry_every: float) -> bool:
        conn: Any = await self._pool.acquire()
        unknown = False  # True while the lock state of ``conn`` is not known
        waiting = False
        try:
            while stop is None or not stop.is_set():
                unknown = True
                granted = await conn.fetchval(_TRY_LOCK, self._class, self._name)
                unknown = False
                if granted:
                    self._conn, conn = conn, None
                    return True
                if stop is None:
                    return False
                if not waiting:
                    waiting = True
                    log.info(
                        f"another {self._holder} holds the chain; waiting as a standby",
                        chain=self._name,
                    )
                await wait_any(stop, within=retry_every)
            return False
        finally:
            if conn is not None:
                await self._give_back(conn, terminate=unknown)

    async def check(self) -> None:
        """Raise :class:`LeaseLost` unless the lock's session answers within 10 s."""
        if self._conn is None:
            raise LeaseLost(f"the lease of {self._name} is not held")
        try:
            await asyncio.wait_for(self._conn.fetchval("SELECT 1"), _CHECK_SECONDS)
        except Exception as exc:  # any failure of the session means the lock may be gone
            raise LeaseLost(f"the lock connection of {self._name} failed: {exc}") from exc

    async def release(self) -> None:
        """Unlock and give the connection back; nothing if not held (or if the
        connection was lost: the lock ended with its session)."""
        conn, self._conn = self._conn, None
        if conn is None or released(conn):
            return
        unlocked = False
        try:
            await conn.execute(_UNLOCK, self._class, self._name)
            unlocked = True
        except Exception:
            if not released(conn):
                raise
            log.debug("the lease's connection was lost; its lock with it", chain=self._name)
        finally:
            await self._give_back(conn, terminate=not unlocked)

    async def _give_back(self, conn: Any, *, terminate: bool) -> None:
        # terminated: the session ends, and any lock it holds with it
        await give_back(self._pool, conn, terminate_first=terminate)
