"""One active executor per chain: the chain's executor
:class:`~intentd.adapters.postgres.lease.Lease`.

The lease's connection is held for the whole life of the executor (the same
connection listens for ``NOTIFY``). A second executor of the chain waits as a
standby, retrying every ``retry_every`` seconds, and takes over once the first one's
session ends (process killed, connection lost: PostgreSQL releases the lock).

The lock is a fence of convenience, not of safety: should two executors ever run
at once (a session the server has not yet noticed is dead), every step they take
is still a compare-and-set under the action's row lock (see ``execution_store``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.execution_store import ACTIONS_CHANNEL
from intentd.adapters.postgres.held_connections import unlisten
from intentd.adapters.postgres.lease import Lease

__all__ = ["ExecutorLease"]

log = structlog.get_logger()
_LOCK_CLASS = 0x1A7E_0E01  # first key of the two-key advisory lock; the second is the chain


class ExecutorLease(Lease):
    """The chain's executor lease; :meth:`check` raises :class:`LeaseLost`."""

    def __init__(self, pool: Pool, chain: str) -> None:
        super().__init__(pool, _LOCK_CLASS, chain, holder="executor")
        self._chain = chain
        self._listener: Callable[..., None] | None = None

    async def acquire(self, stop: asyncio.Event, *, retry_every: float = 0.5) -> bool:
        """Wait until this process leads the chain; False if ``stop`` was set first."""
        if not await super().acquire(stop, retry_every=retry_every):
            return False
        log.info("executor active")
        return True

    async def listen(self, wakeup: asyncio.Event) -> None:
        """Set ``wakeup`` whenever an action of this chain becomes ready."""
        chain = self._chain

        def notified(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            if payload in ("", chain):
                wakeup.set()

        self._listener = notified
        await self.connection.add_listener(ACTIONS_CHANNEL, notified)

    async def release(self) -> None:
        listener, self._listener = self._listener, None
        try:
            if listener is not None and self.held:
                await unlisten(self.connection, ACTIONS_CHANNEL, listener)
        finally:
            await super().release()
