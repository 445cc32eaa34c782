"""The console's share of the API's database pool.

The overview runs three reads at once, each on a connection of its own (its answer
in tens of milliseconds at 10^6 intents, docs/console.md, Performance). Unbounded, a
burst of overview requests (a team's browsers opening the console at nine, a script
polling it) would take every connection of the process's pool, and the API's own
requests (intents created by the payers, keys checked) would wait and get 503s.
:func:`overview_connection` lends the overview's reads a connection only while the
overview holds fewer than its share (``ConsoleState.overview_reads``: a quarter of
``database.max_pool``, at least one), every request of the process together; a read
waits its turn for at most ``api.db_acquire_timeout``, as for the pool itself, then
the overview is answered 503 ``database_busy`` (``Retry-After``), nothing done.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Request

from intentd.adapters.postgres import Connection
from intentd.api.context import Services
from intentd.api.problems import database_busy
from intentd.console.state import ConsoleState

__all__ = ["overview_connection"]


@asynccontextmanager
async def overview_connection(request: Request) -> AsyncIterator[Connection]:
    """A pooled connection for one of the overview's reads, within the overview's share."""
    services = Services.of(request)
    share = ConsoleState.of(request).overview_reads
    try:
        async with asyncio.timeout(services.settings.api.db_acquire_timeout):
            await share.acquire()
    except TimeoutError:
        raise database_busy() from None
    try:
        async with services.connection() as conn:
            yield conn
    finally:
        share.release()
