"""The advisory-lock leases of the poller and the executor give their connection back
to the pool on every path, and hold the lock only while they say so."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from intentd.adapters.postgres.cursor_store import ChainLock
from intentd.adapters.postgres.executor_lease import ExecutorLease
from intentd.adapters.postgres.lease import Lease, LeaseLost


class _Conn:
    """A pooled connection whose advisory-lock answers are scripted."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.executed: list[str] = []
        self.terminated = False
        self.asked = 0

    async def fetchval(self, sql: str, *args: Any) -> Any:
        self.asked += 1
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def execute(self, sql: str, *args: Any) -> str:
        self.executed.append(sql)
        if "unlock" in sql and self.answers and isinstance(self.answers[0], BaseException):
            raise self.answers.pop(0)
        return "SELECT 1"

    def terminate(self) -> None:
        self.terminated = True


async def asked_times(conn: _Conn, times: int) -> None:
    """Until the lock was asked for `times` times (not a fixed time: on a loaded
    machine a few milliseconds may pass before the first)."""
    async with asyncio.timeout(10):
        while conn.asked < times:  # noqa: ASYNC110 (state of a fake)
            await asyncio.sleep(0.005)


class _Pool:
    def __init__(self, conn: _Conn) -> None:
        self.conn = conn
        self.out = 0

    async def acquire(self) -> _Conn:
        self.out += 1
        return self.conn

    async def release(self, conn: _Conn) -> None:
        assert conn is self.conn
        self.out -= 1


async def test_a_failing_lock_query_gives_the_connection_back() -> None:
    pool = _Pool(_Conn([ConnectionResetError("server closed the connection")]))
    lock = ChainLock(pool, "BASE_TESTNET")  # type: ignore[arg-type]
    with pytest.raises(ConnectionResetError):
        await lock.acquire(asyncio.Event())
    assert pool.out == 0


async def test_a_cancelled_wait_gives_the_connection_back() -> None:
    pool = _Pool(_Conn([False] * 100))
    lock = ChainLock(pool, "BASE_TESTNET")  # type: ignore[arg-type]
    waiting = asyncio.create_task(lock.acquire(asyncio.Event(), retry_every=0.01))
    await asked_times(pool.conn, 3)  # waiting, between two tries
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert pool.out == 0


async def test_a_cancelled_lock_query_ends_the_session_it_may_hold_the_lock_on() -> None:
    asked = asyncio.Event()

    class _Slow(_Conn):
        async def fetchval(self, sql: str, *args: Any) -> Any:
            asked.set()
            await asyncio.sleep(10)

    conn = _Slow([])
    pool = _Pool(conn)
    asking = asyncio.create_task(ExecutorLease(pool, "BASE_TESTNET").acquire(asyncio.Event()))  # type: ignore[arg-type]
    await asyncio.wait_for(asked.wait(), 10)  # the query runs (not 0.01 s: it may not yet)
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    assert pool.out == 0
    assert conn.terminated  # the server may have granted the lock: the session ends


async def test_try_acquire_holds_the_lease_only_when_granted() -> None:
    pool = _Pool(_Conn([False, True]))
    lease = Lease(pool, 7, "x", holder="test")  # type: ignore[arg-type]
    assert not await lease.try_acquire()
    assert not lease.held and pool.out == 0
    assert await lease.try_acquire()
    assert lease.held and pool.out == 1
    await lease.release()
    assert not lease.held and pool.out == 0
    assert not pool.conn.terminated


async def test_stop_while_waiting_gives_the_connection_back_unharmed() -> None:
    pool = _Pool(_Conn([False] * 100))
    stop = asyncio.Event()
    lease = ExecutorLease(pool, "BASE_TESTNET")  # type: ignore[arg-type]
    waiting = asyncio.create_task(lease.acquire(stop, retry_every=0.01))
    await asked_times(pool.conn, 2)  # waiting, between two tries
    stop.set()
    assert not await waiting
    assert pool.out == 0 and not pool.conn.terminated


async def test_a_failed_unlock_ends_the_session_so_the_lock_goes_with_it() -> None:
    pool = _Pool(_Conn([True, ConnectionResetError("gone")]))
    lease = Lease(pool, 7, "x", holder="test")  # type: ignore[arg-type]
    assert await lease.acquire(asyncio.Event())
    with pytest.raises(ConnectionResetError):
        await lease.release()
    assert pool.out == 0 and pool.conn.terminated


async def test_check_says_the_lease_is_lost_when_its_session_fails() -> None:
    pool = _Pool(_Conn([True, ConnectionResetError("gone")]))
    lease = ExecutorLease(pool, "BASE_TESTNET")  # type: ignore[arg-type]
    assert await lease.acquire(asyncio.Event())
    with pytest.raises(LeaseLost):
        await lease.check()
