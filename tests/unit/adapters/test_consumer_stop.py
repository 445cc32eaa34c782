"""A group consumer that a stop reaches during a group join: its fetch returns nothing
at stop, and closing it is abandoned past its bound (aiokafka waits for the join)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.support import unexpected_gap

from intentd.adapters.kafka.consumer_stop import (
    close_consumer,
    fetch_until_stopped,
    start_until_stopped,
)


class Joining:
    """A consumer stuck in a group join: start, getmany and stop wait for it."""

    def __init__(self) -> None:
        self.stopped = False

    async def start(self) -> None:
        await asyncio.sleep(3600)

    async def getmany(self, **_: Any) -> dict[str, list[int]]:
        await asyncio.sleep(3600)
        return {"never": [1]}

    async def stop(self) -> None:
        await asyncio.sleep(3600)
        self.stopped = True


async def test_a_stop_reaches_a_consumer_that_is_joining_its_group() -> None:
    consumer: Any = Joining()
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, stop.set)
    started = time.monotonic()
    assert not await asyncio.wait_for(start_until_stopped(consumer, stop), 2)
    assert (
        await asyncio.wait_for(
            fetch_until_stopped(consumer, stop, timeout_ms=200, recover=unexpected_gap), 2
        )
        == {}
    )
    await asyncio.wait_for(close_consumer(consumer, within=0.1), 2)
    assert time.monotonic() - started < 1
    assert not consumer.stopped  # abandoned, not finished: the group drops the member


async def test_records_come_through_until_stop() -> None:
    class Ready:
        async def getmany(self, **_: Any) -> dict[str, list[int]]:
            return {"partition": [1, 2]}

    consumer: Any = Ready()
    batches = await fetch_until_stopped(
        consumer, asyncio.Event(), timeout_ms=200, recover=unexpected_gap
    )
    assert batches == {"partition": [1, 2]}
