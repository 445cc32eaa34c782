"""The group writer's scheduling, with the database replaced by a fake that takes
10 ms per statement: no create is ever left waiting for a later one."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any, cast

import pytest

from intentd.adapters.intent_store import AddressedIntent, AddressIndexes, Connection, NewIntent
from intentd.adapters.postgres import Pool
from intentd.custody import IntentKeys
from intentd.intents.record import IntentRow
from intentd.intents.writer import IntentWriter, WriterBusy

MNEMONIC = "test test test test test test test test test test test junk"


class FakePool:
    @asynccontextmanager
    async def acquire(self, timeout: float | None = None) -> AsyncIterator[Any]:
        await asyncio.sleep(0)
        yield object()


class CountingIndexes(AddressIndexes):
    def __init__(self) -> None:
        super().__init__()
        self.next = 1

    async def take(self, conn: Connection, count: int) -> list[int]:
        taken = list(range(self.next, self.next + count))
        self.next += count
        return taken


async def slow_insert(conn: Connection, items: Sequence[AddressedIntent]) -> dict[int, IntentRow]:
    await asyncio.sleep(0.01)
    return {
        item.address_index: cast(IntentRow, SimpleNamespace(source_chain="FAKE_CHAIN"))
        for item in items
    }


async def test_no_create_waits_for_a_later_one() -> None:
    writer = IntentWriter(
        cast(Pool, FakePool()),
        IntentKeys(MNEMONIC),
        indexes=CountingIndexes(),
        insert=slow_insert,
    )
    chooser = random.Random(7)
    stuck: list[int] = []

    async def client(number: int) -> None:
        for _ in range(50):
            await asyncio.sleep(chooser.choice([0.01, 0.02]))
            try:
                # The create runs as a task of its own, as a server's request does.
                create = asyncio.ensure_future(writer.insert(cast(NewIntent, number)))
                await asyncio.wait_for(asyncio.shield(create), 1.0)
            except TimeoutError:
                stuck.append(number)
                return

    await asyncio.gather(*(client(n) for n in range(20)))
    assert stuck == []


async def test_a_full_writer_refuses_at_once() -> None:
    """Issue 11, item 11: the queue of creates is bounded; one more is refused (not
    queued), and the creates already waiting are all written."""
    writer = IntentWriter(
        cast(Pool, FakePool()),
        IntentKeys(MNEMONIC),
        indexes=CountingIndexes(),
        insert=slow_insert,
        max_waiting=3,
    )
    first = asyncio.ensure_future(writer.insert(cast(NewIntent, 0)))  # in the write
    await asyncio.sleep(0)
    queued = [asyncio.ensure_future(writer.insert(cast(NewIntent, n))) for n in (1, 2, 3)]
    await asyncio.sleep(0)
    with pytest.raises(WriterBusy):
        await writer.insert(cast(NewIntent, 4))
    assert all(row is not None for row in await asyncio.gather(first, *queued))


class NeverPool:
    @asynccontextmanager
    async def acquire(self, timeout: float | None = None) -> AsyncIterator[Any]:
        await asyncio.wait_for(asyncio.Event().wait(), timeout)
        yield object()


async def test_a_writer_without_a_connection_gives_up_in_time() -> None:
    writer = IntentWriter(
        cast(Pool, NeverPool()), IntentKeys(MNEMONIC), insert=slow_insert, acquire_timeout=0.05
    )
    with pytest.raises(WriterBusy):
        await asyncio.wait_for(writer.insert(cast(NewIntent, 1)), 5)
