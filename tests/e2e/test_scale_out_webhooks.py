"""Two, then three ``intentd webhooks`` processes in group ``webhooks.group`` on Tansu
share the partitions of the events topic. Under a steady flow of events one is killed
with ``kill -9`` and another is added; in the end every event reached every endpoint,
with one delivery recorded per event and endpoint, always the same ``webhook-id`` and
body. Rebalance and takeover times are printed (``pytest -s``)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from tests.broker_tansu import tansu_broker
from tests.integration.api.webhook_support import (
    NETWORKS,
    WEBHOOK_KEY,
    Receiver,
    envelope,
    run_receiver,
)
from tests.scale_out import Group, on_tansu, tansu_env

from intentd.adapters import webhook_endpoints
from intentd.adapters.api_keys import client_id_of
from intentd.adapters.postgres import Pool
from intentd.messages import events_topic
from intentd.settings import Settings
from intentd.webhooks.secret_box import SecretBox, parse_key

pytestmark = pytest.mark.e2e
ENDPOINTS = ("a", "b")
EVENTS = 100
PACE = 0.1


@pytest.fixture(scope="module")
def tansu(infra: dict[str, str]) -> Iterator[str]:
    yield from tansu_broker(infra)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async for r in run_receiver():
        yield r


async def publish_steadily(settings: Settings, events: list[dict[str, Any]]) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.kafka.bootstrap_servers, acks="all", enable_idempotence=False
    )
    await producer.start()
    try:
        topic = events_topic(settings.kafka.topic_prefix)
        for event in events:
            key = str(event["intent"]["id"]).encode()
            await producer.send_and_wait(topic, orjson.dumps(event), key=key)
            await asyncio.sleep(PACE)
    finally:
        await producer.stop()


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
    events = [envelope(client, 7000 + n % 16, n // 16 + 1) for n in range(EVENTS)]
    assert {NETWORKS[e["intent"]["source_chain"]] for e in events} == {"test"}
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
        flow = asyncio.create_task(publish_steadily(settings, events))
        await asyncio.sleep(1.5)
        t0 = time.time()
        group.add("c")
        figures["third member joins (under load)"] = await group.rebalance(t0)
        await asyncio.sleep(1.0)
        killed_at = group.members[0].kill()
        figures["kill -9 of a member: takeover"] = await group.rebalance(killed_at)
        assert not flow.done(), "the flow of events ended before the last member joined"
        t0 = time.time()
        group.add("d")
        figures["a new member joins (under load)"] = await group.rebalance(t0)
        await flow
        done = time.monotonic()
        await wait_until_delivered(pool, client, EVENTS * len(ENDPOINTS))
        figures["last delivery after the last event"] = time.monotonic() - done
    finally:
        exits = await group.stop()
    assert exits and set(exits.values()) == {0}, exits  # SIGTERM: every member stops cleanly
    group.print_figures("webhooks scale-out on Tansu", figures)
    rows = await pool.fetchval(
        "SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e"
        " ON e.id = d.endpoint_id WHERE e.client_id = $1",
        client,
    )
    assert rows == EVENTS * len(ENDPOINTS)  # one delivery per event and endpoint
    by_event = {e["id"]: e for e in events}
    bodies: dict[tuple[str, str], bytes] = {}
    for got in receiver.received:
        event_id = got.headers["webhook-id"]
        assert orjson.loads(got.body)["intent"] == by_event[event_id]["intent"]
        assert bodies.setdefault((got.path, event_id), got.body) == got.body
    assert set(bodies) == {(f"/{n}", e["id"]) for n in ENDPOINTS for e in events}


async def wait_until_delivered(pool: Pool, client: object, expected: int) -> None:
    query = (
        "SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e"
        " ON e.id = d.endpoint_id WHERE e.client_id = $1 AND d.status = 'delivered'"
    )
    deadline = time.monotonic() + 60
    while (delivered := await pool.fetchval(query, client)) < expected:
        assert time.monotonic() < deadline, f"{delivered} of {expected} delivered"
        await asyncio.sleep(0.2)
