"""The API's one way to take a pooled connection: waited for at most a bound.

:func:`bounded_connection` answers a connection of ``pool`` once one comes free
within ``wait`` seconds (``api.db_acquire_timeout``); past it, it raises the 503
``database_busy`` problem (with ``Retry-After``), before anything of the request was
done. No API path waits for a connection without a bound.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from intentd.adapters.postgres import Connection, Pool
from intentd.api.problems import database_busy

__all__ = ["bounded_connection"]


@asynccontextmanager
async def bounded_connection(pool: Pool, wait: float) -> AsyncIterator[Connection]:
    try:
        conn = await pool.acquire(timeout=wait)
    except TimeoutError:
        raise database_busy() from None
    try:
        yield conn
    finally:
        await pool.release(conn)
