"""The group writer's scheduling, with the database replaced by a fake that takes
10 ms per statement: no create is ever left waiting for a later one."""

from __future__ import annotations

import asyncio
import random

import pytest
from tests.unit.intents.intent_store_fakes import FakeIntentStore, Keys, new_intent

from intentd.intents.writer import IntentWriter, WriterBusy


async def test_no_create_waits_for_a_later_one() -> None:
    writer = IntentWriter(FakeIntentStore(delay=0.01), Keys())
    chooser = random.Random(7)
    stuck: list[int] = []

    async def client(number: int) -> None:
        for _ in range(50):
            await asyncio.sleep(chooser.choice([0.01, 0.02]))
            try:
                # The create runs as a task of its own, as a server's request does.
                create = asyncio.ensure_future(writer.insert(new_intent()))
                await asyncio.wait_for(asyncio.shield(create), 1.0)
            except TimeoutError:
                stuck.append(number)
                return

    await asyncio.gather(*(client(n) for n in range(20)))
    assert stuck == []


async def test_a_full_writer_refuses_at_once() -> None:
    """Issue 11, item 11: the queue of creates is bounded; one more is refused (not
    queued), and the creates already waiting are all written."""
    writer = IntentWriter(FakeIntentStore(delay=0.01), Keys(), max_waiting=3)
    first = asyncio.ensure_future(writer.insert(new_intent()))  # in the write
    await asyncio.sleep(0)
    queued = [asyncio.ensure_future(writer.insert(new_intent())) for _ in range(3)]
    await asyncio.sleep(0)
    with pytest.raises(WriterBusy):
        await writer.insert(new_intent())
    assert all(row is not None for row in await asyncio.gather(first, *queued))


async def test_a_writer_without_a_connection_gives_up_in_time() -> None:
    writer = IntentWriter(FakeIntentStore(no_connection=True), Keys(), acquire_timeout=0.05)
    with pytest.raises(WriterBusy):
        await asyncio.wait_for(writer.insert(new_intent()), 5)
