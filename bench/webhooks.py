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
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bench.scratch import scratch_database
from bench.timing import latency
from bench.webhook_role import (
    arrival_ms,
    funded_event,
    new_webhook_key,
    paced,
    prepare,
    publish,
    receiver_site,
    wait_arrived,
    webhooks_role,
)
from intentd.adapters.kafka import KafkaPublisher


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


class Bench:
    def __init__(self, publisher: KafkaPublisher, topic: str, receiver: Receiver, endpoints: int):
        self.publisher = publisher
        self.topic = topic
        self.receiver = receiver
        self.endpoints = endpoints
        self.next = 0
        self.published: dict[str, tuple[float, int]] = {}

    async def publish(self, count: int) -> None:
        numbers = range(self.next, self.next + count)
        self.next += count
        batch = [(funded_event(f"bench-{n % self.endpoints}", n + 1), n) for n in numbers]
        now = await publish(self.publisher, self.topic, [e for e, _ in batch])
        for e, n in batch:
            self.published[e["id"]] = (now, n % self.endpoints)

    async def wait_delivered(self, ids: list[str], timeout: float) -> None:
        await wait_arrived(self.receiver.arrived, ids, timeout)

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
        async for _ in paced(tick, seconds):
            await self.publish(per_tick)
        ids = [i for i in self.published if i not in before and self.published[i][1] in healthy]
        await self.wait_delivered(ids, 60)
        latencies = arrival_ms(self.receiver.arrived, lambda i: self.published[i][0], ids)
        return {
            "events_per_second": round(per_tick / tick),
            "healthy_events": len(ids),
            "delivered": len(latencies),
            **latency(latencies),
        }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    key, box = new_webhook_key()
    receiver = Receiver()
    report: dict[str, Any] = {"endpoints": args.endpoints, "cpus": os.cpu_count()}
    async with (
        receiver_site({"/{name}": receiver.handle}) as base_url,
        scratch_database("hooks") as url,
    ):
        await prepare(
            url, box, ((f"bench-{n}", f"{base_url}/ep{n}") for n in range(args.endpoints))
        )
        async with webhooks_role(url, key, "bench") as (publisher, topic):
            bench = Bench(publisher, topic, receiver, args.endpoints)
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
