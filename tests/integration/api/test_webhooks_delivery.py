"""Webhook delivery over real HTTP to a real receiver: signatures (``standardwebhooks``),
rotation, retries on a controllable clock, Retry-After, 410, the 5-day disable,
redeliver, recover, the test event, ordering, isolation and SSRF at connect time."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from standardwebhooks.webhooks import Webhook
from tests.integration.api.conftest import Api, MakeKey, serve
from tests.integration.api.test_webhooks_api import hooks_settings
from tests.integration.api.webhook_support import (
    Receiver,
    Role,
    envelope,
    make_role,
    run_receiver,
)

from intentd.adapters.kafka import KafkaPublisher, OutgoingMessage, make_consumer
from intentd.adapters.kafka.webhook_feed import KafkaEventFeed
from intentd.adapters.postgres import Pool, webhook_endpoints
from intentd.adapters.postgres.api_keys import client_id_of
from intentd.messages import events_topic
from intentd.settings import Settings
from intentd.webhooks import signing
from intentd.webhooks.intake import consume_events
from intentd.webhooks.schedule import DELAYS, DISABLE_AFTER, JITTER

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
async def hooks(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
) -> AsyncIterator[Api]:
    settings = hooks_settings(infra, make_settings, allow_private=True)
    async for url in serve(settings, pool):
        yield Api(url, settings, http)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async for r in run_receiver():
        yield r


@pytest.fixture
async def role(pool: Pool) -> AsyncIterator[Role]:
    async with pool.acquire() as conn:
        await conn.execute("DELETE FROM webhook_endpoints")
    async for r in make_role(pool):
        yield r
    async with pool.acquire() as conn:
        await conn.execute("DELETE FROM webhook_endpoints")


async def register(api: Api, key: str, url: str, **fields: Any) -> dict[str, Any]:
    status, created, _ = await api.call("POST", "/webhooks", key, body={"url": url, **fields})
    assert status == 201, created
    return created


def verify(secret: str, received: Any) -> dict[str, Any]:
    parsed: dict[str, Any] = Webhook(secret).verify(received.body, received.headers)
    return parsed


async def test_events_from_kafka_reach_every_subscribed_endpoint_signed(
    hooks: Api, make_key: MakeKey, receiver: Receiver, role: Role, isolated_settings: Settings
) -> None:
    key = await make_key("test", client="hooks-kafka")
    client = client_id_of("hooks-kafka")
    every = await register(hooks, key, f"{receiver.url}/every")
    funded = await register(hooks, key, f"{receiver.url}/funded", event_types=["intent_funded"])
    live = await make_key("live", client="hooks-kafka")
    live_hook = await register(hooks, live, "https://example.com/never")
    assert live_hook["mode"] == "live"
    events = [
        envelope(client, 101, 1, "intent_funded"),
        envelope(client, 101, 2, "intent_completed"),
        envelope(client_id_of("someone-else"), 102, 1, "intent_funded"),
    ]
    settings = isolated_settings
    topic = events_topic(settings.kafka.topic_prefix)
    publisher = KafkaPublisher(settings.kafka)
    await publisher.start()
    try:
        await publisher.publish_all(
            [OutgoingMessage(topic, "101", b"not an event")]  # skipped, logged
            + [OutgoingMessage(topic, str(e["intent"]["id"]), orjson.dumps(e)) for e in events]
        )
    finally:
        await publisher.stop()
    consumer = make_consumer(settings.kafka, [topic], group_id=f"{topic}-hooks")
    await consumer.start()
    stop = asyncio.Event()
    feed = KafkaEventFeed(consumer, stop)
    task = asyncio.create_task(consume_events(feed, role.store, {"BASE_TESTNET": "test"}, stop))
    try:
        for _ in range(100):
            async with role.store._pool.acquire() as conn:
                if await conn.fetchval("SELECT count(*) FROM webhook_deliveries") == 3:
                    break
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
        await consumer.stop()
    await role.dispatch(2)  # intent 101's second event waits for its first
    at_every = receiver.at("/every")
    assert [verify(every["secret"], r)["type"] for r in at_every] == [
        "intent_funded",
        "intent_completed",
    ]
    assert [verify(funded["secret"], r)["type"] for r in receiver.at("/funded")] == [
        "intent_funded"
    ]
    first = verify(every["secret"], at_every[0])
    assert first["id"] == events[0]["id"] == at_every[0].headers["webhook-id"]
    assert first["mode"] == "test" and first["sequence"] == 1
    assert first["intent"] == events[0]["intent"]
    assert len(receiver.received) == 3  # nothing for the other client, nothing live


async def test_rotation_sends_both_signatures_for_a_day(
    hooks: Api, make_key: MakeKey, receiver: Receiver, role: Role
) -> None:
    key = await make_key("test", client="hooks-rotation")
    created = await register(hooks, key, f"{receiver.url}/r")
    _, rotated, _ = await hooks.call("POST", f"/webhooks/{created['id']}/rotate-secret", key)
    await role.record(envelope(client_id_of("hooks-rotation"), 201, 1))
    await role.dispatch()
    (got,) = receiver.at("/r")
    assert len(got.headers["webhook-signature"].split(" ")) == 2
    verify(created["secret"], got)
    verify(rotated["secret"], got)
    role.clock.advance(timedelta(hours=24, seconds=1))
    await role.record(envelope(client_id_of("hooks-rotation"), 201, 2))
    await role.dispatch()
    later = receiver.at("/r")[1]
    assert len(later.headers["webhook-signature"].split(" ")) == 1
    # Signed a day ahead (the test's clock): checked at that time.
    now = int(role.clock().timestamp())
    signing.verify(rotated["secret"], later.headers, later.body, now=now)
    with pytest.raises(signing.SignatureError, match="no matching signature"):
        signing.verify(created["secret"], later.headers, later.body, now=now)


async def test_failures_are_retried_on_schedule_and_listed(
    hooks: Api, make_key: MakeKey, receiver: Receiver, role: Role
) -> None:
    key = await make_key("test", client="hooks-retry")
    created = await register(hooks, key, f"{receiver.url}/flaky")
    receiver.answers["/flaky"] = [500, (429, {"Retry-After": "600"}), 204]
    await role.record(envelope(client_id_of("hooks-retry"), 301, 1))
    await role.dispatch()
    assert len(receiver.at("/flaky")) == 1
    await role.dispatch()  # not due yet
    assert len(receiver.at("/flaky")) == 1
    role.clock.advance(DELAYS[0] * (1 + JITTER))
    await role.dispatch()
    assert len(receiver.at("/flaky")) == 2
    role.clock.advance(DELAYS[1] * (1 + JITTER))  # before Retry-After
    await role.dispatch()
    assert len(receiver.at("/flaky")) == 2
    role.clock.advance(timedelta(seconds=600))
    await role.dispatch()
    got = receiver.at("/flaky")
    assert len(got) == 3
    assert len({r.headers["webhook-id"] for r in got}) == 1
    assert len({r.body for r in got}) == 1

    status, page, _ = await hooks.call("GET", f"/webhooks/{created['id']}/deliveries", key)
    assert status == 200
    attempts = page["data"]
    assert [a["status_code"] for a in attempts] == [204, 429, 500]
    assert [a["outcome"] for a in attempts] == ["delivered", "retry", "retry"]
    assert attempts[2]["response"] == "answer 500"
    assert attempts[0]["delivery_status"] == "delivered"
    assert attempts[1]["next_attempt_at"] is not None and attempts[0]["next_attempt_at"] is None
    status, first, _ = await hooks.call(
        "GET", f"/webhooks/{created['id']}/deliveries", key, params={"limit": "1"}
    )
    status, second, _ = await hooks.call(
        "GET",
        f"/webhooks/{created['id']}/deliveries",
        key,
        params={"limit": "1", "cursor": first["next_cursor"]},
    )
    assert second["data"][0]["id"] == attempts[1]["id"]

    # Redeliver a delivered one: sent again, same id and body.
    delivery = attempts[0]["delivery_id"]
    status, _, _ = await hooks.call(
        "POST", f"/webhooks/{created['id']}/deliveries/{delivery}/redeliver", key
    )
    assert status == 202
    await role.dispatch()
    again = receiver.at("/flaky")[-1]
    assert (again.headers["webhook-id"], again.body) == (got[0].headers["webhook-id"], got[0].body)


async def test_gone_disables_then_recover_sends_what_failed(
    hooks: Api, make_key: MakeKey, receiver: Receiver, role: Role
) -> None:
    key = await make_key("test", client="hooks-gone")
    client = client_id_of("hooks-gone")
    created = await register(hooks, key, f"{receiver.url}/gone")
    path = f"/webhooks/{created['id']}"
    receiver.answers["/gone"] = [410, 200]
    await role.record(envelope(client, 401, 1))
    await role.dispatch()
    await role.record(envelope(client, 402, 1))  # not recorded: the endpoint is disabled
    _, endpoint, _ = await hooks.call("GET", path, key)
    assert (endpoint["enabled"], endpoint["disabled_reason"]) == (False, "gone")
    since = "2000-01-01T00:00:00Z"
    status, problem, _ = await hooks.call("POST", f"{path}/recover", key, body={"since": since})
    assert (status, problem["code"]) == (409, "webhook_disabled")
    await hooks.call("PATCH", path, key, body={"enabled": True})
    status, recovered, _ = await hooks.call("POST", f"{path}/recover", key, body={"since": since})
    assert (status, recovered) == (202, {"recovered": 1})
    await role.dispatch()
    got = receiver.at("/gone")
    assert [r.headers["webhook-id"] for r in got] == [got[0].headers["webhook-id"]] * 2
    status, recovered, _ = await hooks.call("POST", f"{path}/recover", key, body={"since": since})
    assert recovered == {"recovered": 0}


async def test_five_days_of_failure_disable_the_endpoint(
    hooks: Api, make_key: MakeKey, receiver: Receiver, role: Role
) -> None:
    key = await make_key("test", client="hooks-failing")
    client = client_id_of("hooks-failing")
    created = await register(hooks, key, f"{receiver.url}/down")
    receiver.answers["/down"] = [503]
    for intent in range(3):
        await role.record(envelope(client, 500 + intent, 1))
        await role.dispatch()
        role.clock.advance(DISABLE_AFTER / 2)
    _, endpoint, _ = await hooks.call("GET", f"/webhooks/{created['id']}", key)
    assert (endpoint["enabled"], endpoint["disabled_reason"]) == (False, "failing")
    assert endpoint["failing_since"] is not None


async def test_test_event_is_signed_and_first_attempts_keep_sequence_order(
    hooks: Api, make_key: MakeKey, receiver: Receiver, role: Role
) -> None:
    key = await make_key("test", client="hooks-order")
    client = client_id_of("hooks-order")
    created = await register(hooks, key, f"{receiver.url}/o")
    status, sent, _ = await hooks.call("POST", f"/webhooks/{created['id']}/test", key)
    assert status == 202
    await role.dispatch()
    (test_event,) = receiver.at("/o")
    assert verify(created["secret"], test_event)["type"] == "webhook_test"
    assert test_event.headers["webhook-id"] == sent["event_id"]
    await role.record(*[envelope(client, 601, seq) for seq in range(1, 7)])
    for _ in range(6):
        await role.dispatch()
    sequences = [verify(created["secret"], r)["sequence"] for r in receiver.at("/o")[1:]]
    assert sequences == [1, 2, 3, 4, 5, 6]


async def test_a_slow_endpoint_does_not_delay_the_others(
    hooks: Api, make_key: MakeKey, receiver: Receiver, role: Role
) -> None:
    key = await make_key("test", client="hooks-slow")
    client = client_id_of("hooks-slow")
    await register(hooks, key, f"{receiver.url}/slow")
    await register(hooks, key, f"{receiver.url}/fast")
    slow = 2.0
    receiver.answers["/slow"] = [(200, {}, slow)]
    await role.record(*[envelope(client, 700 + n, 1) for n in range(8)])
    stop = asyncio.Event()
    running = asyncio.create_task(role.dispatcher.run(stop))
    for _ in range(1000):
        if len(receiver.at("/fast")) == 8:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await running
    # Every fast delivery went out while the slow endpoint held its 4 slots (2 s each):
    # timed from the first slow request, not from the start (a latency on a loaded machine).
    held_until = min(r.at for r in receiver.at("/slow")) + slow
    assert len(receiver.at("/fast")) == 8
    fast_done = max(r.at for r in receiver.at("/fast"))
    assert fast_done < held_until, (fast_done, held_until)
    slow_seen = len([r for r in receiver.at("/slow") if r.at < held_until])
    assert slow_seen == 4  # the per-endpoint limit
    await role.dispatch(2)
    assert len(receiver.at("/slow")) == 8


class Rebinding(AbstractResolver):
    """A name that resolved to a public address at registration and now resolves to
    loopback, where the receiver listens (DNS rebinding)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            {
                "hostname": host,
                "host": "127.0.0.1",
                "port": port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        pass


async def test_internal_addresses_are_refused_at_connect_time(
    pool: Pool, receiver: Receiver, role: Role
) -> None:
    from tests.integration.api.webhook_support import WEBHOOK_KEY

    from intentd.webhooks.secret_box import SecretBox, parse_key

    box = SecretBox(parse_key(WEBHOOK_KEY))
    client = client_id_of("hooks-rebind")
    port = receiver.url.rsplit(":", 1)[1]
    async with pool.acquire() as conn:
        for url in (f"http://shop.example:{port}/rebind", f"http://127.0.0.1:{port}/literal"):
            await webhook_endpoints.create(
                conn, box, client_id=client, mode="test", url=url, event_types=None, description=""
            )
    async for strict in make_role(pool, allow_private=False, resolver=Rebinding()):
        await strict.record(envelope(client, 801, 1))
        await strict.dispatch()
        async with pool.acquire() as conn:
            errors = await conn.fetch(
                "SELECT a.error FROM webhook_attempts a JOIN webhook_endpoints e"
                " ON e.id = a.endpoint_id WHERE e.client_id = $1",
                client,
            )
    assert receiver.received == []
    assert len(errors) == 2
    assert all(r["error"].startswith("refused") for r in errors), errors
    assert any("resolves to 127.0.0.1" in r["error"] for r in errors)


async def test_redirects_are_not_followed(
    hooks: Api, make_key: MakeKey, receiver: Receiver, role: Role
) -> None:
    """A 3xx is a failed attempt: its Location (here an internal path of the same
    server) is never requested, whatever the status."""
    key = await make_key("test", client="hooks-redirect")
    client = client_id_of("hooks-redirect")
    created = await register(hooks, key, f"{receiver.url}/moved")
    statuses = [301, 302, 303, 307, 308]
    receiver.answers["/moved"] = [(s, {"Location": f"{receiver.url}/internal"}) for s in statuses]
    await role.record(*[envelope(client, 1000 + n, 1) for n in range(len(statuses))])
    await role.dispatch(2)  # 4 at a time to one endpoint
    assert len(receiver.at("/moved")) == len(statuses)
    assert receiver.at("/internal") == []
    _, page, _ = await hooks.call("GET", f"/webhooks/{created['id']}/deliveries", key)
    assert sorted(a["status_code"] for a in page["data"]) == statuses
    assert {a["outcome"] for a in page["data"]} == {"retry"}


async def test_ended_deliveries_are_pruned_after_the_retention(
    hooks: Api, make_key: MakeKey, receiver: Receiver, role: Role, pool: Pool
) -> None:
    key = await make_key("test", client="hooks-prune")
    client = client_id_of("hooks-prune")
    await register(hooks, key, f"{receiver.url}/p")
    await role.record(envelope(client, 901, 1))
    await role.dispatch()  # delivered
    receiver.answers["/p"] = [500]
    await role.record(envelope(client, 902, 1))
    await role.dispatch()  # waits for its retry
    assert await role.store.prune(datetime.now(UTC) - timedelta(days=30)) == 0
    assert await role.store.prune(datetime.now(UTC) + timedelta(seconds=1)) == 1
    rows = await pool.fetch(
        "SELECT d.status, (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id)"
        " AS attempts FROM webhook_deliveries d JOIN webhook_endpoints e"
        " ON e.id = d.endpoint_id WHERE e.client_id = $1",
        client,
    )
    assert [(r["status"], r["attempts"]) for r in rows] == [("pending", 1)]
    events = await pool.fetchval("SELECT count(*) FROM webhook_events WHERE intent_id = 901")
    assert events == 0
