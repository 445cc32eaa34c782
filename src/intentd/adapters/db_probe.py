"""A question to PostgreSQL on a connection of its own: is it there?

:class:`ConnectionProbe` keeps one connection (opened when first needed, again after
any failure) and asks ``SELECT 1`` on it. It never takes a connection of the pool:
a pool whose connections are all held by requests is busy, not away, and must not
be reported as away. Each check is bounded by ``within`` seconds (connecting included),
so a stalled server fails the check instead of hanging it.
"""

from __future__ import annotations

import asyncio

import asyncpg

__all__ = ["ConnectionProbe"]


class ConnectionProbe:
    def __init__(self, url: str, *, within: float, application_name: str = "intentd-probe") -> None:
        self._url = url
        self._within = within
        self._name = application_name
        self._conn: asyncpg.Connection | None = None

    async def check(self) -> None:
        """Return once PostgreSQL answered within ``within`` seconds; raise (and drop
        the connection) otherwise."""
        try:
            async with asyncio.timeout(self._within):
                if self._conn is None or self._conn.is_closed():
                    self._conn = await asyncpg.connect(
                        self._url,
                        timeout=self._within,
                        server_settings={"application_name": self._name},
                    )
                await self._conn.fetchval("SELECT 1")
        except BaseException:
            self._drop()
            raise

    async def close(self) -> None:
        self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            conn.terminate()
