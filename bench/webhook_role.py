"""What the webhook benchmarks run: ``intentd webhooks`` as a subprocess (as deployed)
on a topic of its own, fed by this process, delivering to a receiver in this process.

``BENCH_PROFILE=FILE`` runs the role under cProfile, its statistics written to FILE.
"""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from bench.poller_env import ROOT, infra_env
from bench.scratch import CONFIG
from intentd.adapters.kafka import KafkaPublisher, OutgoingMessage
from intentd.adapters.postgres import create_pool, migrate, webhook_endpoints
from intentd.adapters.postgres.api_keys import client_id_of
from intentd.messages import events_topic
from intentd.settings import load_settings
from intentd.webhooks.secret_box import SecretBox, parse_key
from intentd_dev.devinfra.kafka_mock import create_topics

__all__ = [
    "arrival_ms",
    "funded_event",
    "new_webhook_key",
    "paced",
    "prepare",
    "publish",
    "receiver_site",
    "wait_arrived",
    "webhooks_role",
]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_PROFILE = (
    ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE"]] if "BENCH_PROFILE" in os.environ else []
)


def new_webhook_key() -> tuple[str, SecretBox]:
    """A fresh ``INTENTD_WEBHOOK_KEY`` and the box it seals endpoint secrets with."""
    key = base64.b64encode(os.urandom(32)).decode()
    return key, SecretBox(parse_key(key))


@asynccontextmanager
async def receiver_site(routes: Mapping[str, Handler]) -> AsyncIterator[str]:
    """A receiver answering POSTs to each route with its handler, on a free loopback
    port; yields its base URL."""
    app = web.Application()
    for route, handler in routes.items():
        app.router.add_post(route, handler)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def prepare(url: str, box: SecretBox, endpoints: Iterable[tuple[str, str]]) -> None:
    """Migrate the database at ``url`` and register each ``(client, endpoint URL)``."""
    pool = await create_pool(url, max_size=2)
    try:
        await migrate(pool)
        async with pool.acquire() as conn:
            for client, endpoint in endpoints:
                await webhook_endpoints.create(
                    conn,
                    box,
                    client_id=client_id_of(client),
                    mode="test",
                    url=endpoint,
                    event_types=None,
                    description="bench",
                )
    finally:
        await pool.close()


@asynccontextmanager
async def webhooks_role(
    database_url: str, key: str, label: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[KafkaPublisher, str]]:
    """``intentd webhooks`` on ``database_url`` and a new topic (4 partitions), with
    ``env`` added to its environment; yields a started publisher and the topic. On
    exit the publisher stops and the role is terminated (killed after 60 s)."""
    settings = load_settings(CONFIG)
    prefix = f"{label}{secrets.token_hex(3)}"
    topic = events_topic(prefix)
    create_topics(infra_env()["INTENTD_KAFKA_MOCK_CONTROL"], [topic], partitions=4)
    role_env = dict(os.environ)
    role_env.update(
        INTENTD__DATABASE__URL=database_url,
        INTENTD__KAFKA__TOPIC_PREFIX=prefix,
        INTENTD__WEBHOOKS__GROUP=f"{prefix}-webhooks",
        INTENTD__WEBHOOKS__ALLOW_PRIVATE_TARGETS="true",
        INTENTD__OBSERVABILITY__METRICS_PORT="0",
        INTENTD__OBSERVABILITY__LOG_LEVEL="warning",
        INTENTD_WEBHOOK_KEY=key,
    )
    role_env.update(env or {})
    role = subprocess.Popen(
        [sys.executable, *_PROFILE, "-m", "intentd", "--config", str(CONFIG), "webhooks"],
        env=role_env,
        cwd=ROOT,
    )
    publisher = KafkaPublisher(settings.kafka.model_copy(update={"topic_prefix": prefix}))
    try:
        await publisher.start()
        yield publisher, topic
    finally:
        await publisher.stop()
        role.terminate()
        try:
            role.wait(timeout=60)
        except subprocess.TimeoutExpired:
            role.kill()


def funded_event(client: str, intent: int) -> dict[str, Any]:
    """An ``intent_funded`` event of ``client``'s intent ``intent``, a new id."""
    return {
        "id": str(uuid.uuid4()),
        "type": "intent_funded",
        "api_version": "v1",
        "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "sequence": 1,
        "intent": {
            "id": intent,
            "client_id": str(client_id_of(client)),
            "source_chain": "BASE_TESTNET",
            "funding_status": "EXACT",
        },
        "data": {"funding": {"status": "EXACT", "received": "10", "total": "10"}},
    }


async def publish(publisher: KafkaPublisher, topic: str, events: list[dict[str, Any]]) -> float:
    """Publish ``events`` (keyed by intent) and wait for the acknowledgements; the
    monotonic time they were acknowledged."""
    await publisher.publish_all(
        OutgoingMessage(topic, str(e["intent"]["id"]), orjson.dumps(e)) for e in events
    )
    return time.monotonic()


async def wait_arrived(arrived: Mapping[str, float], ids: Iterable[str], timeout: float) -> None:
    """Until every one of ``ids`` is in ``arrived``, or ``timeout`` seconds."""
    wanted = list(ids)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(i in arrived for i in wanted):
            return
        await asyncio.sleep(0.05)


def arrival_ms(
    arrived: Mapping[str, float], sent: Callable[[str], float], ids: Iterable[str]
) -> list[float]:
    """Of each of ``ids`` that arrived, milliseconds from ``sent(id)`` to its arrival."""
    return [(arrived[i] - sent(i)) * 1000 for i in ids if i in arrived]


async def paced(tick: float, seconds: float) -> AsyncIterator[None]:
    """Once every ``tick`` seconds (from now, not drifting) until ``seconds`` passed;
    a late step is not made up for by sleeping less than zero."""
    started = time.monotonic()
    ticks = 0
    while time.monotonic() - started < seconds:
        yield
        ticks += 1
        delay = started + ticks * tick - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
