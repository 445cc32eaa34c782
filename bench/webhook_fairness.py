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


class Run:
    def __init__(self, publisher: KafkaPublisher, topic: str, receiver: Receiver) -> None:
        self.publisher = publisher
        self.topic = topic
        self.receiver = receiver
        self.intent = 0
        self.published: dict[str, float] = {}

    async def publish(self, client: str, count: int) -> list[str]:
        batch = [funded_event(client, self.intent + n) for n in range(1, count + 1)]
        self.intent += count
        await publish(self.publisher, self.topic, batch)
        return [e["id"] for e in batch]

    async def phase(self, rate: int, seconds: int, tarpit_rate: int) -> dict[str, Any]:
        tick = 0.1
        ids: list[str] = []
        carry_b = carry_a = 0.0
        async for _ in paced(tick, seconds):
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
        await wait_arrived(self.receiver.arrived, ids, 120)
        latencies = arrival_ms(self.receiver.arrived, self.published.__getitem__, ids)
        return {
            "b_events": len(ids),
            "b_delivered": len(latencies),
            **{f"b_{name}": value for name, value in latency(latencies).items()},
        }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    key, box = new_webhook_key()
    receiver = Receiver()
    routes = {"/healthy/{n}": receiver.healthy, "/tarpit/{n}": receiver.tarpit}
    report: dict[str, Any] = {"cpus": os.cpu_count(), "load": os.getloadavg()[0]}
    async with (
        receiver_site(routes) as base_url,
        scratch_database("hooks_fair") as url,
    ):
        tarpits = range(args.tarpit_endpoints)
        await prepare(
            url,
            box,
            [
                (HEALTHY, f"{base_url}/healthy/0"),
                *((TARPIT, f"{base_url}/tarpit/{n}") for n in tarpits),
            ],
        )
        timeout = {"INTENTD__WEBHOOKS__TOTAL_TIMEOUT": str(args.total_timeout)}
        async with webhooks_role(url, key, "benchfair", timeout) as (publisher, topic):
            run = Run(publisher, topic, receiver)
            # group joined
            await wait_arrived(receiver.arrived, await run.publish(HEALTHY, 10), 60)
            report["alone"] = await run.phase(args.rate, args.seconds, 0)
            report["tarpit"] = {
                "tarpit_endpoints": args.tarpit_endpoints,
                "tarpit_events_per_second": args.tarpit_rate,
                **await run.phase(args.rate, args.seconds, args.tarpit_rate),
                "tarpit_requests": receiver.tarpit_requests,
                "tarpit_most_held": receiver.most_held,
            }
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
