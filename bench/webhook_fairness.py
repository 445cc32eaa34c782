"""Webhook fairness: a healthy client's delivery latency with and without a tarpit client.

``python -m bench webhook-fairness [--rate 50] [--seconds 20] [--tarpit-endpoints 64]
[--tarpit-rate 10] [--total-timeout 15]``

Needs ``make infra-up`` (PostgreSQL and the Kafka broker). A scratch database and topic;
``intentd webhooks`` as a subprocess, as deployed (its defaults: 256 attempts in flight,
4 per endpoint, ``per_client_in_flight`` 32; ``webhooks.allow_private_targets`` on for
the loopback receiver). Client B has one healthy endpoint (it answers 204 at once);
client A has ``tarpit-endpoints`` endpoints on a tarpit (each request is read and held
until the sender gives up at ``total-timeout``).

1. **alone**: B's events at ``rate`` per second for ``seconds``; per event, the time
   from its publish being acknowledged by Kafka to its arrival at B's endpoint.
2. **tarpit**: the same, while A publishes ``tarpit-rate`` events per second (each one
   delivery per tarpit endpoint, every attempt held to the timeout, retried).

Printed: B's p50 / p99 / max in each phase, and the tarpit's requests and most held at
once. ``BENCH_PROFILE=FILE`` runs the role under cProfile. Run it against another
checkout's code with ``PYTHONPATH=<checkout>/src:.``
(the role is started with the same path) to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import secrets
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from bench.scratch import scratch_database
from bench.webhooks import _PROFILE, CONFIG, ROOT, percentile
from intentd.adapters.kafka import KafkaPublisher, OutgoingMessage
from intentd.adapters.postgres import create_pool, migrate, webhook_endpoints
from intentd.adapters.postgres.api_keys import client_id_of
from intentd.messages import events_topic
from intentd.settings import load_settings
from intentd.webhooks.secret_box import SecretBox, parse_key
from intentd_dev.devinfra.kafka_mock import create_topics

HEALTHY, TARPIT = "bench-fair-healthy", "bench-fair-tarpit"


@dataclass
class Receiver:
    arrived: dict[str, float] = field(default_factory=dict)
    held: int = 0
    most_held: int = 0
    tarpit_requests: int = 0

    async def healthy(self, request: web.Request) -> web.Response:
        await request.read()
        self.arrived.setdefault(request.headers["webhook-id"], time.monotonic())
        return web.Response(status=204)

    async def tarpit(self, request: web.Request) -> web.Response:
        await request.read()
        self.tarpit_requests += 1
        self.held += 1
        self.most_held = max(self.most_held, self.held)
        try:
            await asyncio.sleep(3600)  # cancelled when the sender gives up
        finally:
            self.held -= 1
        return web.Response(status=204)


def event(client: str, intent: int) -> dict[str, Any]:
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


class Run:
    def __init__(self, publisher: KafkaPublisher, topic: str, receiver: Receiver) -> None:
        self.publisher = publisher
        self.topic = topic
        self.receiver = receiver
        self.intent = 0
        self.published: dict[str, float] = {}

    async def publish(self, client: str, count: int) -> list[str]:
        batch = []
        for _ in range(count):
            self.intent += 1
            batch.append(event(client, self.intent))
        await self.publisher.publish_all(
            OutgoingMessage(self.topic, str(e["intent"]["id"]), orjson.dumps(e)) for e in batch
        )
        return [e["id"] for e in batch]

    async def arrival(self, ids: list[str], timeout: float) -> None:
        """Until every one of ``ids`` arrived, or ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(i in self.receiver.arrived for i in ids):
                return
            await asyncio.sleep(0.05)

    async def phase(self, rate: int, seconds: int, tarpit_rate: int) -> dict[str, Any]:
        tick = 0.1
        started = time.monotonic()
        ticks, ids = 0, []
        carry_b = carry_a = 0.0
        while time.monotonic() - started < seconds:
            carry_b += rate * tick
            carry_a += tarpit_rate * tick
            if carry_a >= 1:
                await self.publish(TARPIT, int(carry_a))
                carry_a -= int(carry_a)
            if carry_b >= 1:
                sent = await self.publish(HEALTHY, int(carry_b))
                carry_b -= int(carry_b)
                now = time.monotonic()
                for i in sent:
                    self.published[i] = now
                ids += sent
            ticks += 1
            delay = started + ticks * tick - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        await self.arrival(ids, 120)
        latencies = [
            (self.receiver.arrived[i] - self.published[i]) * 1000
            for i in ids
            if i in self.receiver.arrived
        ]
        return {
            "b_events": len(ids),
            "b_delivered": len(latencies),
            "b_p50_ms": round(percentile(latencies, 0.5), 1),
            "b_p99_ms": round(percentile(latencies, 0.99), 1),
            "b_max_ms": round(max(latencies, default=0.0), 1),
        }


async def prepare(url: str, box: SecretBox, base_url: str, tarpit_endpoints: int) -> None:
    pool = await create_pool(url, max_size=2)
    try:
        await migrate(pool)
        async with pool.acquire() as conn:
            for client, path, count in (
                (HEALTHY, "healthy", 1),
                (TARPIT, "tarpit", tarpit_endpoints),
            ):
                for n in range(count):
                    await webhook_endpoints.create(
                        conn,
                        box,
                        client_id=client_id_of(client),
                        mode="test",
                        url=f"{base_url}/{path}/{n}",
                        event_types=None,
                        description="bench",
                    )
    finally:
        await pool.close()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    settings = load_settings(CONFIG)
    infra = dict(
        line.split("=", 1)
        for line in (ROOT / ".local" / "infra.env").read_text().splitlines()
        if "=" in line
    )
    key = base64.b64encode(os.urandom(32)).decode()
    box = SecretBox(parse_key(key))
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/healthy/{n}", receiver.healthy)
    app.router.add_post("/tarpit/{n}", receiver.tarpit)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    report: dict[str, Any] = {"cpus": os.cpu_count(), "load": os.getloadavg()[0]}
    async with scratch_database("hooks_fair") as url:
        await prepare(url, box, f"http://127.0.0.1:{port}", args.tarpit_endpoints)
        prefix = f"benchfair{secrets.token_hex(3)}"
        topic = events_topic(prefix)
        create_topics(infra["INTENTD_KAFKA_MOCK_CONTROL"], [topic], partitions=4)
        kafka = settings.kafka.model_copy(update={"topic_prefix": prefix})
        env = dict(os.environ)
        env.update(
            INTENTD__DATABASE__URL=url,
            INTENTD__KAFKA__TOPIC_PREFIX=prefix,
            INTENTD__WEBHOOKS__GROUP=f"{prefix}-webhooks",
            INTENTD__WEBHOOKS__ALLOW_PRIVATE_TARGETS="true",
            INTENTD__WEBHOOKS__TOTAL_TIMEOUT=str(args.total_timeout),
            INTENTD__OBSERVABILITY__METRICS_PORT="0",
            INTENTD__OBSERVABILITY__LOG_LEVEL="warning",
            INTENTD_WEBHOOK_KEY=key,
        )
        role = subprocess.Popen(
            [sys.executable, *_PROFILE, "-m", "intentd", "--config", str(CONFIG), "webhooks"],
            env=env,
            cwd=ROOT,
        )
        publisher = KafkaPublisher(kafka)
        await publisher.start()
        run = Run(publisher, topic, receiver)
        try:
            await run.arrival(await run.publish(HEALTHY, 10), 60)  # group joined
            report["alone"] = await run.phase(args.rate, args.seconds, 0)
            report["tarpit"] = {
                "tarpit_endpoints": args.tarpit_endpoints,
                "tarpit_events_per_second": args.tarpit_rate,
                **await run.phase(args.rate, args.seconds, args.tarpit_rate),
                "tarpit_requests": receiver.tarpit_requests,
                "tarpit_most_held": receiver.most_held,
            }
        finally:
            await publisher.stop()
            role.terminate()
            try:
                role.wait(timeout=60)
            except subprocess.TimeoutExpired:
                role.kill()
            await runner.cleanup()
    return report


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=50, help="B's events per second")
    parser.add_argument("--seconds", type=int, default=20, help="each phase's length")
    parser.add_argument("--tarpit-endpoints", type=int, default=64)
    parser.add_argument("--tarpit-rate", type=int, default=10, help="A's events per second")
    parser.add_argument("--total-timeout", type=float, default=15.0)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(main(args)), indent=2))


if __name__ == "__main__":
    run(sys.argv[1:])
