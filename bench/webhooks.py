"""Webhook delivery: events on Kafka to deliveries at local receivers, 100 endpoints.

``python -m bench webhooks [--endpoints 100] [--burst 10000] [--rate 500]
[--seconds 20] [--timeouts 0.1]`` (also ``python -m bench.webhooks``).

Needs ``make infra-up`` (PostgreSQL and the Kafka broker). The run creates a database
and topics of its own, registers ``endpoints`` endpoints (one client each) on a
receiver in this process (aiohttp, loopback) and starts ``intentd webhooks`` as a
subprocess, as deployed (``webhooks.allow_private_targets`` on, for the loopback
receiver). Each event is for one client, round-robin, so one event is one delivery.

Phases:

1. **throughput**: ``burst`` events published at once; deliveries per second from the
   first publish to the last delivery.
2. **latency**: ``rate`` events per second for ``seconds``; per event, the time from
   its publish being acknowledged by Kafka to its arrival at the receiver.
3. **timeouts**: as 2, with ``timeouts`` of the endpoints never answering (each
   attempt to them runs into ``webhooks.total_timeout``); the latency of the others.

Goals (issue 10): at least 2,000 deliveries/s; p99 under 100 ms at 500 events/s; with
10 % of the endpoints timing out, the healthy endpoints' p99 under 200 ms.
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
from pathlib import Path
from typing import Any

import asyncpg
import orjson
from aiohttp import web

from intentd.adapters.kafka import KafkaPublisher, OutgoingMessage
from intentd.adapters.postgres import create_pool, migrate, webhook_endpoints
from intentd.adapters.postgres.api_keys import client_id_of
from intentd.messages import events_topic
from intentd.settings import load_settings
from intentd.webhooks.secret_box import SecretBox, parse_key
from intentd_dev.devinfra.kafka_mock import create_topics

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "config" / "local.toml"
_PROFILE = (
    ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE"]] if "BENCH_PROFILE" in os.environ else []
)
"""``BENCH_PROFILE=FILE``: run the role under cProfile, its statistics written to FILE."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


@dataclass
class Receiver:
    arrived: dict[str, float] = field(default_factory=dict)
    hanging: set[str] = field(default_factory=set)

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        if request.match_info["name"] in self.hanging:
            await asyncio.sleep(3600)
        self.arrived.setdefault(request.headers["webhook-id"], time.monotonic())
        return web.Response(status=204)


async def prepare(database_url: str, endpoints: int, box: SecretBox, base_url: str) -> str:
    admin = await asyncpg.connect(database_url.rpartition("/")[0] + "/postgres")
    name = f"intentd_bench_hooks_{secrets.token_hex(3)}"
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = database_url.rpartition("/")[0] + "/" + name
    pool = await create_pool(url, max_size=2)
    try:
        await migrate(pool)
        async with pool.acquire() as conn:
            for n in range(endpoints):
                await webhook_endpoints.create(
                    conn,
                    box,
                    client_id=client_id_of(f"bench-{n}"),
                    mode="test",
                    url=f"{base_url}/ep{n}",
                    event_types=None,
                    description="bench",
                )
    finally:
        await pool.close()
    return url


async def drop(url: str) -> None:
    base, _, name = url.rpartition("/")
    admin = await asyncpg.connect(base + "/postgres")
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def event(n: int, endpoints: int) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "type": "intent_funded",
        "api_version": "v1",
        "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "sequence": 1,
        "intent": {
            "id": n + 1,
            "client_id": str(client_id_of(f"bench-{n % endpoints}")),
            "source_chain": "BASE_TESTNET",
            "funding_status": "EXACT",
        },
        "data": {"funding": {"status": "EXACT", "received": "10", "total": "10"}},
    }


class Bench:
    def __init__(self, publisher: KafkaPublisher, topic: str, receiver: Receiver, endpoints: int):
        self.publisher = publisher
        self.topic = topic
        self.receiver = receiver
        self.endpoints = endpoints
        self.next = 0
        self.published: dict[str, tuple[float, int]] = {}

    def _batch(self, count: int) -> list[tuple[dict[str, Any], int]]:
        batch = [(event(self.next + i, self.endpoints), self.next + i) for i in range(count)]
        self.next += count
        return batch

    async def publish(self, count: int) -> None:
        batch = self._batch(count)
        await self.publisher.publish_all(
            OutgoingMessage(self.topic, str(e["intent"]["id"]), orjson.dumps(e)) for e, _ in batch
        )
        now = time.monotonic()
        for e, n in batch:
            self.published[e["id"]] = (now, n % self.endpoints)

    async def wait_delivered(self, ids: list[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(i in self.receiver.arrived for i in ids):
                return
            await asyncio.sleep(0.05)

    async def burst(self, count: int) -> dict[str, Any]:
        started = time.monotonic()
        before = set(self.published)
        for _ in range(0, count, 1000):
            await self.publish(1000)
        ids = [i for i in self.published if i not in before]
        await self.wait_delivered(ids, 300)
        done = [self.receiver.arrived[i] for i in ids if i in self.receiver.arrived]
        seconds = max(done) - started if done else float("nan")
        return {
            "events": len(ids),
            "delivered": len(done),
            "seconds": round(seconds, 2),
            "deliveries_per_second": round(len(done) / seconds, 1) if done else 0,
        }

    async def steady(self, rate: int, seconds: int, healthy: set[int]) -> dict[str, Any]:
        before = set(self.published)
        tick = 0.02
        per_tick = max(1, round(rate * tick))
        started = time.monotonic()
        ticks = 0
        while time.monotonic() - started < seconds:
            await self.publish(per_tick)
            ticks += 1
            delay = started + ticks * tick - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        ids = [i for i in self.published if i not in before and self.published[i][1] in healthy]
        await self.wait_delivered(ids, 60)
        latencies = [
            (self.receiver.arrived[i] - self.published[i][0]) * 1000
            for i in ids
            if i in self.receiver.arrived
        ]
        return {
            "events_per_second": round(per_tick / tick),
            "healthy_events": len(ids),
            "delivered": len(latencies),
            "p50_ms": round(percentile(latencies, 0.5), 1),
            "p99_ms": round(percentile(latencies, 0.99), 1),
            "max_ms": round(max(latencies, default=0.0), 1),
        }


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
    app.router.add_post("/{name}", receiver.handle)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    url = await prepare(
        settings.database.url.get_secret_value(), args.endpoints, box, f"http://127.0.0.1:{port}"
    )
    prefix = f"bench{secrets.token_hex(3)}"
    topic = events_topic(prefix)
    create_topics(infra["INTENTD_KAFKA_MOCK_CONTROL"], [topic], partitions=4)
    kafka = settings.kafka.model_copy(update={"topic_prefix": prefix})
    env = dict(os.environ)
    env.update(
        INTENTD__DATABASE__URL=url,
        INTENTD__KAFKA__TOPIC_PREFIX=prefix,
        INTENTD__WEBHOOKS__GROUP=f"{prefix}-webhooks",
        INTENTD__WEBHOOKS__ALLOW_PRIVATE_TARGETS="true",
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
    bench = Bench(publisher, topic, receiver, args.endpoints)
    report: dict[str, Any] = {"endpoints": args.endpoints, "cpus": os.cpu_count()}
    try:
        await bench.publish(args.endpoints)  # warm-up: group joined, connections open
        await bench.wait_delivered(list(bench.published), 60)
        everyone = set(range(args.endpoints))
        report["throughput"] = await bench.burst(args.burst)
        report["latency"] = await bench.steady(args.rate, args.seconds, everyone)
        slow = set(range(0, args.endpoints, max(1, round(1 / args.timeouts))))
        receiver.hanging = {f"ep{n}" for n in slow}
        report["timeouts"] = {
            "endpoints_timing_out": len(slow),
            **await bench.steady(args.rate, args.seconds, everyone - slow),
        }
        report["goals"] = {
            "deliveries_per_second": 2000,
            "latency_p99_ms": 100,
            "timeouts_healthy_p99_ms": 200,
        }
    finally:
        await publisher.stop()
        role.terminate()
        try:
            role.wait(timeout=60)
        except subprocess.TimeoutExpired:
            role.kill()
        await runner.cleanup()
        await drop(url)
    return report


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", type=int, default=100)
    parser.add_argument("--burst", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=500)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--timeouts", type=float, default=0.1)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(main(args)), indent=2))


if __name__ == "__main__":
    run(sys.argv[1:])
