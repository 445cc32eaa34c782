"""SIGTERM and SIGINT from the first instant of a process: a signal that comes before
the process acts ends it at once with status 0, a stop that comes while it connects
ends it at once, and a second signal cancels what still runs without waiting for the drain
deadline (docs/operations.md, Stopping)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.unit.lifecycle.lifecycle_builders import settings as unit_settings

from intentd.composition.process import Roles, close_pool, run_process
from intentd.runtime import run_roles
from intentd.stopping import Stopping, StopRequest
from intentd.wait import Stopped, until_stopped


@pytest.fixture(autouse=True)
def default_handlers() -> Iterator[None]:
    """Each test installs handlers of its own; pytest's come back after it."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_a_signal_before_the_process_acts_exits_at_once_with_status_0() -> None:
    request = StopRequest()
    request.install()
    with pytest.raises(SystemExit) as exited:
        signal.raise_signal(signal.SIGTERM)
    assert exited.value.code == 0


async def test_a_signal_after_the_loop_is_remembered_as_a_stop() -> None:
    request = StopRequest()
    request.install()
    with request.watching():
        pass
    os.kill(os.getpid(), signal.SIGTERM)  # the process lives on: it closes what it holds
    assert request.requested
    with request.watching() as stopping:
        assert stopping.stop.is_set()
        assert not stopping.now.is_set()


async def test_in_the_loop_the_first_signal_stops_and_the_second_hurries() -> None:
    request = StopRequest()
    request.install()
    with request.watching() as stopping:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(stopping.stop.wait(), 2)
        assert not stopping.now.is_set()
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.wait_for(stopping.now.wait(), 2)
    os.kill(os.getpid(), signal.SIGTERM)  # after the loop: remembered again, not fatal
    assert request.received == 3


async def test_a_second_signal_cancels_the_roles_without_waiting_for_the_deadline() -> None:
    stopping = Stopping()
    finished: list[str] = []

    async def deaf(_: asyncio.Event) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            finished.append("deaf")

    loop = asyncio.get_running_loop()
    loop.call_later(0.05, stopping.stop.set)
    loop.call_later(0.2, stopping.now.set)
    started = time.monotonic()
    await asyncio.wait_for(run_roles([deaf], drain_seconds=60, stopping=stopping), 5)
    assert finished == ["deaf"]
    assert time.monotonic() - started < 2


async def test_a_step_is_cancelled_when_stop_comes_first() -> None:
    stop = asyncio.Event()
    cleaned: list[str] = []

    async def connect() -> int:
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.append("connect")
        return 1

    asyncio.get_running_loop().call_later(0.05, stop.set)
    with pytest.raises(Stopped):
        await asyncio.wait_for(until_stopped(connect(), stop), 2)
    assert cleaned == ["connect"]
    assert await until_stopped(asyncio.sleep(0, 7), asyncio.Event()) == 7
    with pytest.raises(Stopped):
        await until_stopped(asyncio.sleep(0, 7), stop)  # already stopped: not run


async def test_a_stop_while_the_process_connects_to_the_database_ends_it_at_once() -> None:
    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(3600)  # accepts, never answers: the connect hangs
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    base = unit_settings()
    database = base.database.model_copy(
        update={"url": base.database.url.__class__(f"postgresql://u:p@127.0.0.1:{port}/x")}
    )
    settings = base.model_copy(update={"database": database})
    stopping = Stopping()
    asyncio.get_running_loop().call_later(0.2, stopping.stop.set)
    started = time.monotonic()
    try:
        await asyncio.wait_for(
            run_process(settings, Roles(lifecycle=True), metrics_port=None, stopping=stopping),
            10,
        )
    finally:
        server.close()
    assert time.monotonic() - started < 3


async def test_a_pool_whose_connections_do_not_come_back_is_closed_at_once() -> None:
    class Held:
        terminated = False

        async def close(self) -> None:
            await asyncio.sleep(3600)  # a cancelled task still holds a connection

        def terminate(self) -> None:
            self.terminated = True

    pool: Any = Held()
    await asyncio.wait_for(close_pool(pool, within=0.1), 2)
    assert pool.terminated
