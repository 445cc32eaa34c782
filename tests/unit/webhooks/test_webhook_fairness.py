"""The fair share of a claim between clients (pure), and the dispatcher keeping it."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.webhooks.webhook_fakes import FakeSender, FakeStore

from intentd.webhooks.dispatcher import Dispatcher
from intentd.webhooks.fairness import Candidate, fair_share
from intentd.webhooks.ports import Attempt, DueDelivery
from intentd.webhooks.secret_box import SecretBox
from intentd.webhooks.signing import new_secret

T0 = datetime(2026, 11, 23, 12, tzinfo=UTC)
BOX = SecretBox(os.urandom(32))
CLIENTS = [UUID(int=n) for n in range(1, 6)]
ENDPOINTS = [(UUID(int=100 + n), CLIENTS[n % len(CLIENTS)]) for n in range(12)]


def candidate(n: int, endpoint: int, seconds: int) -> Candidate:
    endpoint_id, client_id = ENDPOINTS[endpoint]
    return Candidate(n, endpoint_id, client_id, T0 + timedelta(seconds=seconds))


candidates = st.lists(
    st.tuples(st.integers(0, len(ENDPOINTS) - 1), st.integers(0, 50)), max_size=60
).map(lambda rows: [candidate(n, e, s) for n, (e, s) in enumerate(rows)])
busies = st.dictionaries(st.sampled_from(CLIENTS), st.integers(0, 10))


def client_order(pool: list[Candidate], client: UUID) -> list[Candidate]:
    """A client's candidates in its own turn order: its endpoints in turn, then due."""
    turns: list[tuple[int, datetime, int, Candidate]] = []
    for endpoint in {c.endpoint_id for c in pool if c.client_id == client}:
        queue = sorted(
            (c for c in pool if c.endpoint_id == endpoint), key=lambda c: (c.due_at, c.delivery_id)
        )
        turns += [(turn, c.due_at, c.delivery_id, c) for turn, c in enumerate(queue, 1)]
    return [t[3] for t in sorted(turns, key=lambda t: t[:3])]


@settings(max_examples=400)
@given(candidates, busies, st.integers(1, 8), st.integers(0, 40))
def test_each_client_gets_its_turn_up_to_its_cap_least_loaded_first(
    pool: list[Candidate], busy: dict[UUID, int], per_client: int, limit: int
) -> None:
    picked = fair_share(pool, limit=limit, per_client=per_client, busy=busy)
    assert len(picked) == len(set(picked)) <= limit
    assert set(picked) <= set(pool)
    got = Counter(c.client_id for c in picked)
    room = {c: max(per_client - busy.get(c, 0), 0) for c in CLIENTS}
    for client in CLIENTS:
        assert got[client] <= room[client]
        # A client's picks are its first ones in its own turn order.
        mine = [c for c in picked if c.client_id == client]
        assert set(mine) == set(client_order(pool, client)[: len(mine)])
    left = [c for c in pool if c not in picked]
    if len(picked) < limit:  # work-conserving: only capped clients are left out
        assert all(got[c.client_id] == room[c.client_id] for c in left)
    for x in {c.client_id for c in left if got[c.client_id] < room[c.client_id]}:
        # x could have had another one: nobody got a pick ranking after it.
        for y in got:
            assert busy.get(y, 0) + got[y] <= busy.get(x, 0) + got[x] + 1


def test_a_client_with_nothing_running_goes_before_a_busy_one() -> None:
    tarpit = [candidate(n, 0, 0) for n in range(300)]  # older than B's
    healthy = candidate(999, 1, 40)
    tarpit_client, healthy_client = ENDPOINTS[0][1], ENDPOINTS[1][1]
    picked = fair_share([*tarpit, healthy], limit=1, per_client=32, busy={tarpit_client: 20})
    assert picked == [healthy]
    both = fair_share([*tarpit, healthy], limit=10, per_client=32, busy={})
    assert Counter(c.client_id for c in both) == {tarpit_client: 9, healthy_client: 1}
    assert both[1] == healthy  # second: after the tarpit's first, before its second
    capped = fair_share(tarpit, limit=100, per_client=32, busy={tarpit_client: 30})
    assert len(capped) == 2


def due(n: int, client: UUID, endpoint: UUID) -> DueDelivery:
    return DueDelivery(
        id=n,
        endpoint_id=endpoint,
        client_id=client,
        url=f"{client}/{endpoint}",
        event_id=f"evt-{n}",
        body=b"{}",
        sealed_secrets=(BOX.seal(new_secret(), endpoint),),
        round_attempts=0,
        failing_since=None,
    )


async def test_a_hanging_client_holds_its_cap_and_another_is_sent_at_once() -> None:
    now = datetime.now(UTC)
    a, b = uuid4(), uuid4()
    a_endpoints = [uuid4() for _ in range(8)]
    store = FakeStore()
    store.pending = [(now, due(n, a, a_endpoints[n % 8])) for n in range(64)]
    hang = asyncio.Event()
    sender = FakeSender(lambda url: Attempt(200, 0.0))
    sender.gates = {f"{a}/{e}": hang for e in a_endpoints}
    dispatcher = Dispatcher(store, sender, BOX, lambda: now, max_in_flight=16, per_client=4)
    assert await dispatcher.dispatch_once() == 4  # A's cap, not the 16 free slots
    store.pending.append((now, due(1000, b, uuid4())))
    assert await dispatcher.dispatch_once() == 1
    assert store.busy_seen[-1] == {a: 4}
    for _ in range(100):
        if store.attempts:
            break
        await asyncio.sleep(0.01)
    assert [d.client_id for d, _, _ in store.attempts] == [b]
    assert dispatcher.in_flight == 4
    hang.set()
    await dispatcher.drain()
    await dispatcher.dispatch_once()
    assert store.busy_seen[-1] == {}  # every finished attempt gave its slot back
