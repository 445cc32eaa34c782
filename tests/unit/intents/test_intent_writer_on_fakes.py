"""The intent writer's decisions on a fake store: how creates are grouped into
statements, and which creates a failure fails."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import pytest
from tests.unit.intents.intent_store_fakes import (
    FakeConnectionLost,
    FakeIntentStore,
    FakeRefused,
    Keys,
    new_intent,
)

from intentd.intents.writer import IntentWriteFailed, IntentWriter


async def test_creates_waiting_together_are_written_with_one_statement() -> None:
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys())

    rows = await asyncio.gather(*(writer.insert(new_intent()) for _ in range(40)))

    assert [len(s) for s in store.statements] == [40]
    assert all(row is not None for row in rows)
    assert len({row.address_index for row in rows if row is not None}) == 40
    for row in rows:
        assert row is not None
        assert row.intent_address == Keys().address(row.address_index).lower()


async def test_creates_arriving_during_a_write_go_together_in_the_next() -> None:
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys())
    first = asyncio.ensure_future(writer.insert(new_intent()))
    await asyncio.sleep(0)  # the first write is under way

    await asyncio.gather(*(writer.insert(new_intent()) for _ in range(39)))

    assert await first is not None
    assert [len(s) for s in store.statements] == [1, 39]


async def test_a_lone_create_is_written_at_once() -> None:
    store = FakeIntentStore()
    writer = IntentWriter(store, Keys())

    row = await asyncio.wait_for(writer.insert(new_intent()), 1)

    assert row is not None
    assert store.statements == [[row.address_index]]


async def test_a_statement_holds_at_most_max_batch_creates() -> None:
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys(), max_batch=4)

    await asyncio.gather(*(writer.insert(new_intent()) for _ in range(13)))

    assert [len(s) for s in store.statements] == [4, 4, 4, 1]


async def test_at_most_max_in_flight_writes_run_at_once() -> None:
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys(), max_batch=2, max_in_flight=3)

    rows = await asyncio.gather(*(writer.insert(new_intent()) for _ in range(20)))

    assert store.most_sessions == 3
    assert len({row.address_index for row in rows if row is not None}) == 20


async def test_one_write_at_a_time_by_default() -> None:
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys())

    await asyncio.gather(*(writer.insert(new_intent()) for _ in range(20)))

    assert store.most_sessions == 1


async def test_a_refused_row_fails_only_its_own_create() -> None:
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys())
    first = asyncio.ensure_future(writer.insert(new_intent()))
    await asyncio.sleep(0)  # the first write is under way; the rest wait for the next
    creates = [new_intent(), new_intent(decimals=99), new_intent()]

    results = await asyncio.gather(*(writer.insert(n) for n in creates), return_exceptions=True)

    assert await first is not None
    assert isinstance(results[1], FakeRefused)  # the store's own error, not a wrapper
    assert results[0] is not None and not isinstance(results[0], BaseException)
    assert results[2] is not None and not isinstance(results[2], BaseException)
    # The group statement, then each row alone.
    assert [len(s) for s in store.statements] == [1, 3, 1, 1, 1]
    assert len(store.rows) == 3


async def test_a_lone_refused_create_gets_the_error_itself() -> None:
    writer = IntentWriter(FakeIntentStore(), Keys())

    with pytest.raises(FakeRefused):
        await writer.insert(new_intent(decimals=99))


async def test_a_lost_connection_fails_every_create_of_the_batch() -> None:
    store = FakeIntentStore(delay=0.01, lose_connection_after=1)
    writer = IntentWriter(store, Keys())
    first = asyncio.ensure_future(writer.insert(new_intent()))
    await asyncio.sleep(0)

    results = await asyncio.gather(
        *(writer.insert(new_intent()) for _ in range(3)), return_exceptions=True
    )

    assert await first is not None
    assert all(isinstance(r, IntentWriteFailed) for r in results)
    assert all(isinstance(r.__cause__, FakeConnectionLost) for r in results)  # type: ignore[union-attr]
    assert len({id(r) for r in results}) == 3  # each create its own exception
    assert len(store.rows) == 1


async def test_a_lone_create_whose_connection_is_lost_gets_the_error_itself() -> None:
    writer = IntentWriter(FakeIntentStore(lose_connection_after=0), Keys())

    with pytest.raises(FakeConnectionLost):
        await writer.insert(new_intent())


async def test_a_connection_lost_while_writing_rows_alone_fails_only_the_rest() -> None:
    # 1: the first create; 2: the group, refused; 3: the first row alone; then lost.
    store = FakeIntentStore(delay=0.01, lose_connection_after=3)
    writer = IntentWriter(store, Keys())
    first = asyncio.ensure_future(writer.insert(new_intent()))
    await asyncio.sleep(0)
    creates = [new_intent(), new_intent(decimals=99), new_intent()]

    results = await asyncio.gather(*(writer.insert(n) for n in creates), return_exceptions=True)

    assert await first is not None
    assert results[0] is not None and not isinstance(results[0], BaseException)
    assert all(isinstance(r, IntentWriteFailed) for r in results[1:])
    assert len(store.rows) == 2


async def test_a_key_used_twice_in_one_batch_writes_one_intent() -> None:
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys())
    client = uuid4()
    first = asyncio.ensure_future(writer.insert(new_intent()))
    await asyncio.sleep(0)

    one, two = await asyncio.gather(
        writer.insert(new_intent(client, key="k")), writer.insert(new_intent(client, key="k"))
    )

    assert await first is not None
    assert one is not None
    assert two is None  # the client already used the key: nothing written for it
    assert [len(s) for s in store.statements] == [1, 2]


async def test_a_cancelled_create_is_still_written() -> None:
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys())
    gone = asyncio.ensure_future(writer.insert(new_intent(key="c")))
    kept = asyncio.ensure_future(writer.insert(new_intent()))
    await asyncio.sleep(0)
    gone.cancel()

    assert await kept is not None
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert len(store.rows) == 2


def test_batch_and_in_flight_limits_are_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        IntentWriter(FakeIntentStore(), Keys(), max_batch=0)
    with pytest.raises(ValueError, match="at least 1"):
        IntentWriter(FakeIntentStore(), Keys(), max_in_flight=0)
