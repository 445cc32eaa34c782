"""A client's cap of intents awaiting payment (issue 18, item 3): the decision, and the
intent writer on a fake store (a capped create fails alone, nothing of it written; the
others of its write go through; a place frees when an intent leaves PENDING)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from uuid import UUID, uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.intents.intent_store_fakes import FakeIntentStore, Keys, new_intent
from tests.unit.test_intent_plan import NOW, SETTINGS, request

from intentd.domain.status import IntentStatus
from intentd.intents.open_limit import OpenIntentLimit, refused
from intentd.intents.service import create_intent
from intentd.intents.writer import IntentWriter

A, B = UUID(int=1), UUID(int=2)


def test_creates_fit_in_order_until_their_client_has_the_cap() -> None:
    assert refused([A, B, A, A, B], {A: 1}, 3) == [False, False, False, True, False]
    assert refused([A], {}, 1) == [False]
    assert refused([A], {A: 5}, 3) == [True]  # a cap lowered below what a client has


@given(
    clients=st.lists(st.sampled_from([A, B]), max_size=40),
    held=st.integers(min_value=0, max_value=20),
    cap=st.integers(min_value=1, max_value=20),
)
def test_no_client_ever_ends_over_the_cap_and_none_is_refused_below_it(
    clients: list[UUID], held: int, cap: int
) -> None:
    answer = refused(clients, {A: held}, cap)
    admitted_a = sum(1 for c, no in zip(clients, answer, strict=True) if c == A and not no)
    admitted_b = sum(1 for c, no in zip(clients, answer, strict=True) if c == B and not no)
    assert held + admitted_a <= max(cap, held) and admitted_b <= cap
    assert admitted_a == min(max(cap - held, 0), clients.count(A))  # as many as fit
    assert admitted_b == min(cap, clients.count(B))


async def test_a_write_refuses_only_the_creates_past_their_clients_cap() -> None:
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys(), max_pending=2)
    news = [new_intent(A), new_intent(B), new_intent(A), new_intent(A), new_intent(B)]

    answers = await asyncio.gather(*(writer.insert(n) for n in news), return_exceptions=True)

    assert [isinstance(a, OpenIntentLimit) for a in answers] == [False] * 3 + [True, False]
    assert len(store.statements) == 1  # still one write for the batch
    assert sorted(str(r.client_id) for r in store.rows.values()) == [str(A)] * 2 + [str(B)] * 2
    limit = answers[3]
    assert isinstance(limit, OpenIntentLimit)
    assert (limit.code, limit.field, limit.cap) == ("open_intent_limit", None, 2)


async def test_a_place_frees_when_an_intent_leaves_pending() -> None:
    store = FakeIntentStore()
    writer = IntentWriter(store, Keys(), max_pending=1)
    first = await writer.insert(new_intent(A))
    assert first is not None
    with pytest.raises(OpenIntentLimit):
        await writer.insert(new_intent(A))
    store.rows[first.id] = replace(first, status=IntentStatus.EXPIRED)
    assert await writer.insert(new_intent(A)) is not None


async def test_without_a_cap_the_writer_counts_nothing() -> None:
    store = FakeIntentStore()
    writer = IntentWriter(store, Keys())
    assert all([await writer.insert(new_intent(A)) for _ in range(5)])


async def test_a_retry_at_the_cap_gets_the_intent_it_repeats() -> None:
    """Two creates with one Idempotency-Key race while the client has one place left:
    the write counts both, so the cap refuses the second, yet what it repeats was made;
    it gets that intent. A new create is refused."""
    store = FakeIntentStore(delay=0.01)
    writer = IntentWriter(store, Keys(), max_pending=1)

    async def create(key: str) -> object:
        return await create_intent(
            SETTINGS, writer, request(), client_id=A, now=NOW, idempotency_key=key
        )

    first, second = await asyncio.gather(create("k"), create("k"))
    assert first == second
    assert len(store.rows) == 1
    with pytest.raises(OpenIntentLimit):
        await create("another")


def test_an_unknown_client_has_no_intents() -> None:
    assert refused([uuid4()], {A: 9}, 1) == [False]
