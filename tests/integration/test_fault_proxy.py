"""The fault proxy of the dependency-outage tests, in front of the real PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from intentd_dev.fault_proxy import TcpFaultProxy, proxy_for, through_proxy


@pytest.fixture
async def proxy(database_url: str) -> AsyncIterator[TcpFaultProxy]:
    async with proxy_for(database_url, 5432) as instance:
        yield instance


async def test_a_cut_resets_open_connections_and_refuses_new_ones_until_restored(
    database_url: str, proxy: TcpFaultProxy
) -> None:
    url = through_proxy(database_url, proxy)
    conn = await asyncpg.connect(url)
    assert await conn.fetchval("SELECT 1") == 1
    await proxy.cut()
    with pytest.raises((ConnectionError, asyncpg.PostgresConnectionError, OSError)):
        await conn.fetchval("SELECT 1")
    with pytest.raises(ConnectionRefusedError):
        await asyncpg.connect(url, timeout=5)
    await proxy.restore()
    again = await asyncpg.connect(url)
    try:
        assert await again.fetchval("SELECT 2") == 2
    finally:
        await again.close()


async def test_a_timed_cut_restores_itself(database_url: str, proxy: TcpFaultProxy) -> None:
    await proxy.cut(seconds=0.2)
    assert proxy.cut_now
    deadline = asyncio.get_running_loop().time() + 10
    while proxy.cut_now:
        assert asyncio.get_running_loop().time() < deadline, "the cut did not end"
        await asyncio.sleep(0.05)
    conn = await asyncpg.connect(through_proxy(database_url, proxy))
    await conn.close()


async def test_a_stall_holds_every_byte_until_restored_then_delivers_them(
    database_url: str, proxy: TcpFaultProxy
) -> None:
    conn = await asyncpg.connect(through_proxy(database_url, proxy))
    try:
        proxy.stall()
        query = asyncio.ensure_future(conn.fetchval("SELECT 3"))
        done, _ = await asyncio.wait({query}, timeout=0.5)
        assert not done, "a stalled link answered"
        await proxy.restore()
        assert await asyncio.wait_for(query, 10) == 3
    finally:
        await conn.close()
