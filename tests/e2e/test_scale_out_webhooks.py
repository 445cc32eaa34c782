"""Two, then three ``intentd webhooks`` processes in group ``webhooks.group`` on Tansu
share the partitions of the events topic. Under a steady flow of events one is killed
with ``kill -9`` and another is added; the flow lasts until the last member has joined
and recorded events of its own. In the end every event reached every endpoint, with
one delivery recorded per event and endpoint, always the same ``webhook-id`` and body.
Rebalance and takeover times are printed (``pytest -s``)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from tests.broker_tansu import tansu_broker
from tests.integration.api.webhook_support import (
    NETWORKS,
    WEBHOOK_KEY,
    Receiver,
    envelope,
    run_receiver,
)
from tests.scale_out import Flow, Group, Message, on_tansu, tansu_env

from intentd.adapters.postgres import Pool, webhook_endpoints
from intentd.adapters.postgres.api_keys import client_id_of
from intentd.messages import events_topic
from intentd.settings import Settings
from intentd.webhooks.secret_box import SecretBox, parse_key

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
"""Four rebalances and a flow on a loaded machine may take more than the default 120 s."""
ENDPOINTS = ("a", "b")
PACE = 0.1
OWN_EVENTS = 3
"""Events the last member records itself before the flow ends."""


@pytest.fixture(scope="module")
def tansu(infra: dict[str, str]) -> Iterator[str]:
    yield from tansu_broker(infra)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async for r in run_receiver():
        yield r


def event_flow(settings: Settings, client: UUID, events: list[dict[str, Any]]) -> Flow:
    """Events of 16 intents, each intent's in sequence, until the test ends the flow."""
    topic = events_topic(settings.kafka.topic_prefix)

    async def batch(n: int) -> list[Message]:
        event = envelope(client, 7000 + n % 16, n // 16 + 1)
        assert NETWORKS[event["intent"]["source_chain"]] == "test"
        events.append(event)
        key = str(event["intent"]["id"]).encode()
        return [Message(topic, key, orjson.dumps(event), str(event["id"]))]

    return Flow(settings.kafka.bootstrap_servers, batch, PACE)


async def test_webhook_members_share_the_events_and_survive_kill_9(
    own_stack: tuple[Settings, Pool], tansu: str, receiver: Receiver, tmp_path: Path
) -> None:
    base, pool = own_stack
    settings = await on_tansu(base, tansu)
    client = client_id_of(f"hooks-scale-{secrets.token_hex(3)}")
    box = SecretBox(parse_key(WEBHOOK_KEY))
    async with pool.acquire() as conn:
        for name in ENDPOINTS:
            await webhook_endpoints.create(
                conn,
                box,
                client_id=client,
                mode="test",
                url=f"{receiver.url}/{name}",
                event_types=None,
                description="",
            )
    events: list[dict[str, Any]] = []
    flow = event_flow(settings, client, events)
    topic = events_topic(settings.kafka.topic_prefix)
    env = tansu_env(
        settings,
        tansu,
        INTENTD_WEBHOOK_KEY=WEBHOOK_KEY,
        INTENTD__WEBHOOKS__ALLOW_PRIVATE_TARGETS="true",
        INTENTD__WEBHOOKS__GROUP=f"{topic}-webhooks",
        INTENTD__WEBHOOKS__TOTAL_TIMEOUT="2",
        INTENTD__WEBHOOKS__POLL_INTERVAL="0.2",
    )
    group = Group("webhooks", env, tmp_path, frozenset(f"{topic}:{p}" for p in range(4)))
    figures: dict[str, float] = {}
    try:
        started = time.time()
        group.add("a")
        figures["first member up and assigned"] = await group.rebalance(started)
        t0 = time.time()
        group.add("b")
        figures["second member joins"] = await group.rebalance(t0)
        flow.start()
        await flow.until_sent(15)  # a flow on, as 1.5 s of it when the machine is idle
        t0 = time.time()
        group.add("c")
        figures["third member joins (under load)"] = await group.rebalance(t0)
        await flow.until_sent(len(flow.sent) + 10)
        killed_at = group.members[0].kill()
        figures["kill -9 of a member: takeover"] = await group.rebalance(killed_at)
        assert flow.running, "the flow of events ended before the last member joined"
        t0 = time.time()
        last = group.add("d")
        figures["a new member joins (under load)"] = took = await group.rebalance(t0)
        joined, own = t0 + took, last.assignments()[-1][1]

        async def recorded_by_the_last_member() -> bool:
            ids = flow.since(joined, own)
            return len(ids) >= OWN_EVENTS and await recorded(pool, ids) >= OWN_EVENTS

        await flow.until(recorded_by_the_last_member, "the last member recorded events")
        done = time.monotonic()
        await wait_until_delivered(pool, client, len(events) * len(ENDPOINTS))
        figures["last delivery after the last event"] = time.monotonic() - done
    finally:
        await flow.stop()
        exits = await group.stop()
    assert exits and set(exits.values()) == {0}, exits  # SIGTERM: every member stops cleanly
    group.print_figures("webhooks scale-out on Tansu", figures)
    rows = await pool.fetchval(
        "SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e"
        " ON e.id = d.endpoint_id WHERE e.client_id = $1",
        client,
    )
    print(f"  {len(events)} events published, one each {PACE}s")
    assert rows == len(events) * len(ENDPOINTS)  # one delivery per event and endpoint
    by_event = {e["id"]: e for e in events}
    bodies: dict[tuple[str, str], bytes] = {}
    for got in receiver.received:
        event_id = got.headers["webhook-id"]
        assert orjson.loads(got.body)["intent"] == by_event[event_id]["intent"]
        assert bodies.setdefault((got.path, event_id), got.body) == got.body
    assert set(bodies) == {(f"/{n}", e["id"]) for n in ENDPOINTS for e in events}


async def recorded(pool: Pool, event_ids: list[str]) -> int:
    """How many of these events the intake recorded."""
    query = "SELECT count(DISTINCT event_id) FROM webhook_deliveries WHERE event_id = ANY($1)"
    count: int = await pool.fetchval(query, event_ids)
    return count


async def wait_until_delivered(pool: Pool, client: object, expected: int) -> None:
    query = (
        "SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e"
        " ON e.id = d.endpoint_id WHERE e.client_id = $1 AND d.status = 'delivered'"
    )
    deadline = time.monotonic() + 60
    while (delivered := await pool.fetchval(query, client)) < expected:
        assert time.monotonic() < deadline, f"{delivered} of {expected} delivered"
        await asyncio.sleep(0.2)
