"""Helpers of the webhook tests: a real receiver, event envelopes, a dispatcher on a
controllable clock."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from aiohttp import web

from intentd.adapters.http.webhook_sender import HttpSender
from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.webhook_store import PostgresWebhookStore
from intentd.webhooks.dispatcher import Dispatcher
from intentd.webhooks.intake import parse_event
from intentd.webhooks.secret_box import SecretBox, parse_key

WEBHOOK_KEY = base64.b64encode(os.urandom(32)).decode()
NETWORKS = {"BASE_TESTNET": "test", "ARBITRUM_TESTNET": "test", "BASE": "main"}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class Receiver:
    """An HTTP server that records every request; ``answers[path]`` says what to answer
    (a list consumed in order, the last one repeated): status, or (status, headers),
    or (status, headers, delay seconds)."""

    url: str = ""
    received: list[Received] = field(default_factory=list)
    answers: dict[str, list[Any]] = field(default_factory=dict)

    def at(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.received.append(
            Received(
                request.path,
                dict(request.headers),
                body,
                asyncio.get_running_loop().time(),
            )
        )
        plan = self.answers.get(request.path, [200])
        answer = plan.pop(0) if len(plan) > 1 else plan[0]
        status, headers, delay = 200, {}, 0.0
        if isinstance(answer, int):
            status = answer
        else:
            status, headers, *rest = answer
            delay = rest[0] if rest else 0.0
        if delay:
            await asyncio.sleep(delay)
        return web.Response(status=status, headers=headers, text=f"answer {status}")


async def run_receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/{tail:.*}", receiver.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    receiver.url = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        await runner.cleanup()


def envelope(
    client_id: UUID,
    intent_id: int,
    sequence: int,
    event_type: str = "intent_funded",
    chain: str = "BASE_TESTNET",
) -> dict[str, Any]:
    return {
        "id": str(uuid4()),
        "type": event_type,
        "api_version": "v1",
        "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "sequence": sequence,
        "intent": {"id": intent_id, "client_id": str(client_id), "source_chain": chain},
        "data": {"funding": {"status": "exact"}},
    }


class Clock:
    """Real time plus an offset the test moves forward."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, delta: timedelta) -> None:
        self.offset += delta


@dataclass
class Role:
    """The role's parts on a test's clock: record events, dispatch what is due."""

    store: PostgresWebhookStore
    dispatcher: Dispatcher
    clock: Clock
    sender: HttpSender

    async def record(self, *events: dict[str, Any]) -> int:
        import orjson

        return await self.store.record_events(
            [parse_event(orjson.dumps(e), NETWORKS) for e in events]
        )

    async def dispatch(self, rounds: int = 1) -> None:
        """Claim and send what is due, ``rounds`` times, waiting for every attempt."""
        for _ in range(rounds):
            await self.dispatcher.dispatch_once()
            await self.dispatcher.drain()


async def make_role(
    pool: Pool,
    *,
    allow_private: bool = True,
    resolver: Any = None,
    per_endpoint: int = 4,
    per_client: int = 32,
    total_timeout: float = 5.0,
    clock: Callable[[], datetime] | None = None,
) -> AsyncIterator[Role]:
    the_clock = Clock()
    store = PostgresWebhookStore(pool)
    sender = HttpSender(
        allow_private=allow_private,
        connect_timeout=2.0,
        total_timeout=total_timeout,
        resolver=resolver,
    )
    dispatcher = Dispatcher(
        store,
        sender,
        SecretBox(parse_key(WEBHOOK_KEY)),
        clock or the_clock,
        per_endpoint=per_endpoint,
        per_client=per_client,
        lease=timedelta(seconds=30),
    )
    try:
        yield Role(store, dispatcher, the_clock, sender)
    finally:
        await sender.close()
