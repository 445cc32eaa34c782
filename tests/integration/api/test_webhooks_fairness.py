"""One client's tarpit does not slow another client's webhooks (issue 18, item 4).

A real tarpit (a TCP server that reads each request and never answers, so every
attempt runs into the sender's total timeout) holds the 64 endpoints of client A; a
healthy receiver holds client B's endpoint. B's delivery latency is measured alone,
then while A's backlog of deliveries (and their retries) keeps the tarpit as full as
the dispatcher lets it, and A adds an event (64 more deliveries) before each of B's:
B's p99 must stay within a small factor of B's p99 alone.
Every wait polls with a deadline; nothing sleeps a fixed time.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from uuid import UUID

import pytest
from tests.integration.api.webhook_support import (
    WEBHOOK_KEY,
    Receiver,
    Role,
    envelope,
    make_role,
    run_receiver,
)

from intentd.adapters.postgres import Pool, webhook_endpoints
from intentd.adapters.postgres.api_keys import client_id_of
from intentd.webhooks.secret_box import SecretBox, parse_key

pytestmark = pytest.mark.integration

TARPIT_ENDPOINTS = 64
TIMEOUT = 3.0
"""The sender's total timeout: how long the tarpit holds each attempt."""
A_EVENTS = 20
"""Each event of A is one delivery per endpoint: 1,280 deliveries, five waves of 256."""
SAMPLES = 40
FACTOR = 4.0
SLACK = 0.5
"""B's p99 with the tarpit may be at most FACTOR x its p99 alone + SLACK seconds (the
slack absorbs scheduling noise on a shared machine; starvation costs whole timeouts,
a lost wakeup the dispatcher's 1 s poll)."""


@dataclass
class Tarpit:
    """Accepts connections, reads each request and never answers it."""

    url: str = ""
    held: int = 0
    """Requests read and not answered, now."""
    requests: int = 0
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                self.requests += 1
                self.held += 1
                try:
                    await reader.read()  # until the sender gives up and closes
                finally:
                    self.held -= 1
                return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    def close_all(self) -> None:
        for writer in list(self._writers):
            writer.close()


async def run_tarpit() -> AsyncIterator[Tarpit]:
    tarpit = Tarpit()
    server = await asyncio.start_server(tarpit.handle, "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    tarpit.url = f"http://127.0.0.1:{port}"
    try:
        yield tarpit
    finally:
        server.close()
        tarpit.close_all()
        await server.wait_closed()


@pytest.fixture
async def tarpit() -> AsyncIterator[Tarpit]:
    async for t in run_tarpit():
        yield t


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async for r in run_receiver():
        yield r


async def until(condition: object, deadline: float, what: str) -> None:
    """Poll ``condition()`` every few milliseconds until true; fail after ``deadline`` s."""
    assert callable(condition)
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while not condition():
        if loop.time() > end:
            pytest.fail(f"{what}: not within {deadline} s")
        await asyncio.sleep(0.002)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def p50(values: list[float]) -> float:
    return percentile(values, 0.5)


def p99(values: list[float]) -> float:
    return percentile(values, 0.99)


async def measure_b(
    role: Role,
    receiver: Receiver,
    client: UUID,
    first: int,
    *,
    span: float,
    tarpit_client: UUID | None = None,
) -> list[float]:
    """B's latencies (record to arrival, seconds), one event at a time, at least
    SAMPLES of them and for at least ``span`` seconds; with ``tarpit_client``, one
    more event of that client (a delivery to each of its endpoints) before each."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    latencies: list[float] = []
    intent = first
    while len(latencies) < SAMPLES or loop.time() - started < span:
        if tarpit_client is not None:
            await role.record(envelope(tarpit_client, 100_000 + intent, 1))
        sent = loop.time()
        seen = len(receiver.at("/b"))
        await role.record(envelope(client, intent, 1))
        role.dispatcher.wakeup.set()
        await until(lambda n=seen: len(receiver.at("/b")) > n, 10 * TIMEOUT, "B's delivery")
        latencies.append(receiver.at("/b")[-1].at - sent)
        intent += 1
    return latencies


async def test_the_claim_serves_clients_in_turn_least_loaded_first_up_to_a_cap(
    pool: Pool, receiver: Receiver
) -> None:
    """The SQL claim applies ``fairness.fair_share``: A's older backlog does not go
    first; each client in turn, A's endpoints in turn; A's cap counts what runs here."""
    box = SecretBox(parse_key(WEBHOOK_KEY))
    tag = secrets.token_hex(3)
    a, b, c = (client_id_of(f"hooks-turn-{name}-{tag}") for name in "abc")
    endpoints: dict[UUID, UUID] = {}
    async with pool.acquire() as conn:
        for client, count in ((a, 3), (b, 1), (c, 1)):
            for n in range(count):
                created, _ = await webhook_endpoints.create(
                    conn,
                    box,
                    client_id=client,
                    mode="test",
                    url=f"{receiver.url}/{n}",
                    event_types=None,
                    description="",
                )
                endpoints[created.id] = client
    try:
        async for role in make_role(pool):
            await role.record(*[envelope(a, 20_000 + n, 1) for n in range(10)])  # 30, oldest
            await role.record(*[envelope(b, 21_000 + n, 1) for n in range(2)])
            await role.record(envelope(c, 22_000, 1))
            now = role.clock()
            first = await role.store.claim_due(
                now, 5, 4, timedelta(seconds=30), per_client=32, busy={}
            )
            assert Counter(d.client_id for d in first) == {a: 2, b: 2, c: 1}
            assert len({d.endpoint_id for d in first if d.client_id == a}) == 2
            assert all(endpoints[d.endpoint_id] == d.client_id for d in first)
            # A has 31 running here (its cap is 32): one more of A, whatever the room.
            second = await role.store.claim_due(
                now, 100, 4, timedelta(seconds=30), per_client=32, busy={a: 31}
            )
            assert Counter(d.client_id for d in second) == {a: 1}
            # Per endpoint (every process's leases): A's endpoints have 4 - 1, 4 - 1
            # and 4 - 1 room left after the three leased above.
            third = await role.store.claim_due(
                now, 100, 4, timedelta(seconds=30), per_client=32, busy={}
            )
            assert Counter(d.client_id for d in third) == {a: 9}
    finally:
        async with pool.acquire() as conn:
            await conn.execute(
                "DELETE FROM webhook_endpoints WHERE client_id = ANY($1::uuid[])", [a, b, c]
            )


async def test_a_tarpit_client_does_not_move_another_clients_p99(
    pool: Pool, tarpit: Tarpit, receiver: Receiver
) -> None:
    box = SecretBox(parse_key(WEBHOOK_KEY))
    tag = secrets.token_hex(3)
    a, b = client_id_of(f"hooks-tarpit-{tag}"), client_id_of(f"hooks-healthy-{tag}")
    async with pool.acquire() as conn:
        for n in range(TARPIT_ENDPOINTS):
            await webhook_endpoints.create(
                conn,
                box,
                client_id=a,
                mode="test",
                url=f"{tarpit.url}/a{n}",
                event_types=None,
                description="tarpit",
            )
        await webhook_endpoints.create(
            conn,
            box,
            client_id=b,
            mode="test",
            url=f"{receiver.url}/b",
            event_types=None,
            description="healthy",
        )
    stop = asyncio.Event()
    try:
        async for role in make_role(pool, total_timeout=TIMEOUT):
            running = asyncio.create_task(role.dispatcher.run(stop))
            try:
                alone = await measure_b(role, receiver, b, 1, span=0.0)
                await role.record(*[envelope(a, 10_000 + n, 1) for n in range(A_EVENTS)])
                role.dispatcher.wakeup.set()
                # A holds every slot the dispatcher gives it (and keeps them: each
                # attempt takes the whole timeout, and A's backlog refills them).
                await until(lambda: tarpit.held >= 16, 10 * TIMEOUT, "the tarpit filling")
                loaded = await measure_b(
                    role, receiver, b, 1_000, span=2.5 * TIMEOUT, tarpit_client=a
                )
                a_held = tarpit.held
            finally:
                stop.set()
                tarpit.close_all()
                await running
    finally:
        async with pool.acquire() as conn:
            await conn.execute(
                "DELETE FROM webhook_endpoints WHERE client_id = ANY($1::uuid[])", [a, b]
            )
    print(
        f"B alone: p50 {p50(alone) * 1000:.1f} ms, p99 {p99(alone) * 1000:.1f} ms;"
        f" with A's tarpit ({a_held} held, {tarpit.requests} requests):"
        f" p50 {p50(loaded) * 1000:.1f} ms, p99 {p99(loaded) * 1000:.1f} ms, {len(loaded)} samples"
    )
    assert tarpit.requests >= 16 and a_held > 0  # A's tarpit was loaded throughout
    assert p99(loaded) <= FACTOR * p99(alone) + SLACK, (
        f"B's p99 {p99(loaded) * 1000:.0f} ms with A's tarpit,"
        f" {p99(alone) * 1000:.0f} ms alone ({len(loaded)} samples)"
    )
