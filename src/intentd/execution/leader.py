"""One active executor per chain: a PostgreSQL session advisory lock.

The lock lives on a connection held for the whole life of the executor (the same
connection listens for ``NOTIFY``). A second executor of the chain waits as a
standby, retrying every ``retry_every`` seconds, and takes over once the first one's
session ends (process killed, connection lost: PostgreSQL releases the lock).

The lock is a fence of convenience, not of safety: should two executors ever run
at once (a session the server has not yet noticed is dead), every step they take
is still a compare-and-set under the action's row lock (see ``execution_store``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import structlog

from intentd.adapters.execution_store import ACTIONS_CHANNEL
from intentd.adapters.postgres import Pool

__all__ = ["ExecutorLease", "LeadershipLost"]

log = structlog.get_logger()
_LOCK_CLASS = 0x1A7E_0E01  # first key of the two-key advisory lock; the second is the chain


class LeadershipLost(Exception):
    """The connection that holds the chain's lock is gone: stop executing at once."""


class ExecutorLease:
    def __init__(self, pool: Pool, chain: str) -> None:
        self._pool = pool
        self._chain = chain
        self._conn: Any = None
        self._listener: Callable[..., None] | None = None

    async def acquire(self, stop: asyncio.Event, *, retry_every: float = 0.5) -> bool:
        """Wait until this process leads the chain; False if ``stop`` was set first."""
        conn: Any = await self._pool.acquire()
        waiting = False
        try:
            while not stop.is_set():
                if await conn.fetchval(
                    "SELECT pg_try_advisory_lock($1, hashtext($2))", _LOCK_CLASS, self._chain
                ):
                    self._conn, conn = conn, None
                    log.info("executor active")
                    return True
                if not waiting:
                    waiting = True
                    log.info("another executor leads the chain; waiting as a standby")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), retry_every)
            return False
        finally:
            if conn is not None:
                await self._pool.release(conn)

    async def listen(self, wakeup: asyncio.Event) -> None:
        """Set ``wakeup`` whenever an action of this chain becomes ready."""
        chain = self._chain

        def notified(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            if payload in ("", chain):
                wakeup.set()

        self._listener = notified
        await self._conn.add_listener(ACTIONS_CHANNEL, notified)

    async def check(self) -> None:
        """Raise :class:`LeadershipLost` unless the lock's session is alive."""
        try:
            await asyncio.wait_for(self._conn.fetchval("SELECT 1"), 10)
        except Exception as exc:  # any failure of the session means the lock may be gone
            raise LeadershipLost(f"the lock connection of {self._chain} failed: {exc}") from exc

    async def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if self._listener is not None:
                await conn.remove_listener(ACTIONS_CHANNEL, self._listener)
            await conn.execute(
                "SELECT pg_advisory_unlock($1, hashtext($2))", _LOCK_CLASS, self._chain
            )
        finally:
            await self._pool.release(conn)
