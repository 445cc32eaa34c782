"""The group writer's scheduling, with the database replaced by a fake that takes
10 ms per statement: no create is ever left waiting for a later one."""

from __future__ import annotations

import asyncio
import random

from tests.unit.intents.intent_store_fakes import FakeIntentStore, Keys, new_intent

from intentd.intents.writer import IntentWriter


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
