"""Crash safety of ``intentd webhooks`` run as a user runs it.

Three runs on one topic and one consumer group: the first dies (``os._exit``) after
recording its first batch of deliveries and before committing the offsets; the
second is killed with SIGKILL while attempts are in flight (the receiver holds each
answer); the third runs until everything is delivered. Every event reaches every
endpoint at least once, always with the same ``webhook-id`` and body, and the only
duplicates are the attempts that were in flight when the process was killed (sent,
not recorded).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from tests.integration.api.webhook_support import (
    NETWORKS,
    WEBHOOK_KEY,
    Receiver,
    envelope,
    run_receiver,
)
from tests.support import daemon_env, start_daemon, wait_exit

from intentd.adapters.kafka import KafkaPublisher, OutgoingMessage
from intentd.adapters.postgres import Pool, webhook_endpoints
from intentd.adapters.postgres.api_keys import client_id_of
from intentd.faults import CRASH_EXIT_CODE
from intentd.messages import events_topic
from intentd.settings import Settings
from intentd.webhooks.secret_box import SecretBox, parse_key

pytestmark = pytest.mark.integration
ENDPOINTS = ("a", "b", "c")
EVENTS = 30


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async for r in run_receiver():
        yield r


async def test_kill_9_loses_nothing_and_duplicates_only_what_was_in_flight(
    pool: Pool, isolated_settings: Settings, receiver: Receiver, tmp_path: Path
) -> None:
    settings = isolated_settings
    client = client_id_of(f"hooks-crash-{secrets.token_hex(3)}")
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
    events = [envelope(client, 9000 + n % 10, n // 10 + 1) for n in range(EVENTS)]
    assert {NETWORKS[e["intent"]["source_chain"]] for e in events} == {"test"}
    topic = events_topic(settings.kafka.topic_prefix)
    publisher = KafkaPublisher(settings.kafka)
    await publisher.start()
    try:
        await publisher.publish_all(
            OutgoingMessage(topic, str(e["intent"]["id"]), orjson.dumps(e)) for e in events
        )
    finally:
        await publisher.stop()
    env = daemon_env(
        settings,
        INTENTD_WEBHOOK_KEY=WEBHOOK_KEY,
        INTENTD__WEBHOOKS__ALLOW_PRIVATE_TARGETS="true",
        INTENTD__WEBHOOKS__GROUP=f"{topic}-webhooks",
        INTENTD__WEBHOOKS__TOTAL_TIMEOUT="2",
        INTENTD__WEBHOOKS__POLL_INTERVAL="0.2",
    )
    log = tmp_path / "webhooks.log"

    # 1. Dies after recording deliveries, before committing the offsets.
    first = start_daemon(["webhooks"], {**env, "INTENTD_CRASH_AT": "webhooks.after_record"}, log)
    assert await wait_exit(first, 60) == CRASH_EXIT_CODE, log.read_text()
    recorded = await pool.fetchval(
        "SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e"
        " ON e.id = d.endpoint_id WHERE e.client_id = $1",
        client,
    )
    assert recorded > 0

    # 2. SIGKILL while answers are held back (attempts in flight).
    for name in ENDPOINTS:
        receiver.answers[f"/{name}"] = [(200, {}, 0.5)]
    second = start_daemon(["webhooks"], env, log)
    for _ in range(600):
        if len(receiver.received) >= 10:
            break
        await asyncio.sleep(0.05)
    os.kill(second.pid, signal.SIGKILL)
    assert await wait_exit(second, 30) == -signal.SIGKILL
    in_flight_at_kill = len(receiver.received) - await _delivered(pool, client)

    # 3. Runs to the end.
    for name in ENDPOINTS:
        receiver.answers[f"/{name}"] = [200]
    third = start_daemon(["webhooks"], env, log)
    try:
        for _ in range(600):
            if await _delivered(pool, client) == EVENTS * len(ENDPOINTS):
                break
            await asyncio.sleep(0.1)
    finally:
        third.terminate()
        assert await wait_exit(third, 30) == 0, log.read_text()
    assert await _delivered(pool, client) == EVENTS * len(ENDPOINTS), log.read_text()

    by_event = {e["id"]: e for e in events}
    copies: Counter[tuple[str, str]] = Counter()
    for got in receiver.received:
        event_id = got.headers["webhook-id"]
        body = orjson.loads(got.body)
        assert body["id"] == event_id and body["intent"] == by_event[event_id]["intent"]
        copies[got.path, event_id] += 1
    bodies: dict[tuple[str, str], bytes] = {}
    for got in receiver.received:
        key = (got.path, got.headers["webhook-id"])
        assert bodies.setdefault(key, got.body) == got.body  # same bytes every time
    assert set(copies) == {(f"/{n}", e["id"]) for n in ENDPOINTS for e in events}
    duplicates = sum(count - 1 for count in copies.values())
    assert duplicates <= in_flight_at_kill, (duplicates, in_flight_at_kill)
    print(f"webhook crash test: {duplicates} duplicates, {in_flight_at_kill} in flight at kill")


async def _delivered(pool: Pool, client: object) -> int:
    count: int = await pool.fetchval(
        "SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e"
        " ON e.id = d.endpoint_id WHERE e.client_id = $1 AND d.status = 'delivered'",
        client,
    )
    return count
