"""A lifecycle task that fails because the database went away is restarted; anything
else still ends the role."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from intentd.adapters.db_failures import classify
from intentd.lifecycle.outages import outlast_outages


async def test_a_database_outage_restarts_the_task() -> None:
    errors: list[Exception] = [
        ConnectionRefusedError(),
        asyncpg.ConnectionDoesNotExistError("connection was closed"),
    ]
    runs = 0

    async def run(stop: asyncio.Event) -> None:
        nonlocal runs
        runs += 1
        if errors:
            raise errors.pop(0)

    await outlast_outages("relay", run, asyncio.Event(), classify=classify, base=0.001)
    assert runs == 3


async def test_any_other_failure_ends_it() -> None:
    async def run(stop: asyncio.Event) -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await outlast_outages("relay", run, asyncio.Event(), classify=classify, base=0.001)


async def test_stop_during_the_pause_ends_it_quietly() -> None:
    stop = asyncio.Event()
    runs = 0

    async def run(stop_: asyncio.Event) -> None:
        nonlocal runs
        runs += 1
        stop.set()
        raise OSError("database gone")

    await outlast_outages("relay", run, stop, classify=classify, base=10)
    assert runs == 1
