"""A lease whose connection PostgreSQL or the network dropped: its errors say so.

asyncpg hands a dropped connection back to its pool by itself; a lease that then
called ``terminate()`` on it raised ``InterfaceError: cannot call
Connection.terminate(): connection has been released back to the pool`` from its
``finally``, which hid the real cause of the failure (and read as a bug)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from intentd.adapters.postgres import Pool, create_pool
from intentd.adapters.postgres.cursor_store import ChainLock
from intentd.adapters.postgres.lease import LeaseLost
from intentd_dev.fault_proxy import TcpFaultProxy, proxy_for, through_proxy

LOST = (asyncpg.PostgresConnectionError, ConnectionError, OSError)


@pytest.fixture
async def proxy(database_url: str) -> AsyncIterator[TcpFaultProxy]:
    async with proxy_for(database_url, 5432) as instance:
        yield instance


@pytest.fixture
async def proxied_pool(database_url: str, proxy: TcpFaultProxy) -> AsyncIterator[Pool]:
    pool = await create_pool(through_proxy(database_url, proxy), max_size=2)
    yield pool
    pool.terminate()


async def test_releasing_a_lease_whose_connection_was_cut_is_quiet(
    proxied_pool: Pool, proxy: TcpFaultProxy, pool: Pool
) -> None:
    lease = ChainLock(proxied_pool, "OUTAGE_RELEASE")
    assert await lease.acquire(asyncio.Event())
    await proxy.cut()
    await lease.release()  # the lock went with the session: nothing left to do, no error
    assert not lease.held
    await proxy.restore()
    assert await _lock_free(pool, "OUTAGE_RELEASE")  # the lock ended with its session


async def test_a_lock_query_cut_midway_raises_the_cut(
    proxied_pool: Pool, proxy: TcpFaultProxy, pool: Pool
) -> None:
    lease = ChainLock(proxied_pool, "OUTAGE_ACQUIRE")
    async with proxied_pool.acquire() as warm:  # a connection open before the stall
        await warm.fetchval("SELECT 1")
    proxy.stall()
    asking = asyncio.create_task(lease.acquire(asyncio.Event()))
    done, _ = await asyncio.wait({asking}, timeout=0.5)
    assert not done, "the lock query answered through a stalled link"
    await proxy.cut()  # the query in flight is cut: its answer is unknown
    with pytest.raises(LOST) as raised:
        await asyncio.wait_for(asking, 10)
    assert not isinstance(raised.value, asyncpg.InterfaceError), raised.value
    await proxy.restore()
    assert await _lock_free(pool, "OUTAGE_ACQUIRE")


async def test_check_reports_the_lost_session(proxied_pool: Pool, proxy: TcpFaultProxy) -> None:
    lease = ChainLock(proxied_pool, "OUTAGE_CHECK")
    assert await lease.acquire(asyncio.Event())
    await proxy.cut()
    with pytest.raises(LeaseLost):
        await lease.check()
    await lease.release()
    assert not lease.held


async def _lock_free(pool: Pool, name: str) -> bool:
    """Whether another session can take the lease (the first one's session ended)."""
    for _ in range(100):  # the server sees the reset within moments
        lease = ChainLock(pool, name)
        if await lease.try_acquire():
            await lease.release()
            return True
        await asyncio.sleep(0.05)
    return False
