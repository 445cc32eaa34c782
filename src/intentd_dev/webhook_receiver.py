"""The demo merchant's webhook receiver: verifies every signature, remembers what came.

:class:`Receiver` is a small aiohttp server on a free ``127.0.0.1`` port. Every POST is
verified as a merchant would: with the ``standardwebhooks`` package (Standard Webhooks'
own Python library, a dev dependency) when it is importable, else with
``intentd.webhooks.signing.verify``. A verified event is answered 204 and kept by its
``webhook-id`` (a redelivery is counted, not kept twice); anything else is answered 401
and counted as refused. :func:`register` creates the endpoint through the HTTP API and
:meth:`Receiver.register` creates its endpoint through the HTTP API (and
:meth:`Receiver.stop` deletes it, so later runs' events are not retried to a dead
port); :meth:`Receiver.missing` says which expected events have not arrived signed.
Development tooling only: the secret stays in memory and is never printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from intentd.webhooks.signing import SignatureError, verify

__all__ = ["Receiver", "Verifier", "describe_delivery", "register", "verifier_for", "wait_signed"]

Verifier = Callable[[bytes, dict[str, str]], dict[str, Any]]
"""Checks one request (raw body, headers); the event, or raises ValueError."""


def verifier_for(secret: str) -> tuple[Verifier, str]:
    """A verifier of ``secret``'s signatures, and which library it uses."""
    try:
        from standardwebhooks.webhooks import Webhook, WebhookVerificationError
    except ImportError:

        def ours(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
            try:
                verify(secret, headers, body, now=int(time.time()))
            except SignatureError as exc:
                raise ValueError(str(exc)) from None
            event: dict[str, Any] = json.loads(body)
            return event

        return ours, "intentd.webhooks.signing"
    hook = Webhook(secret)

    def standard(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
        try:
            event: dict[str, Any] = hook.verify(body, headers)
        except WebhookVerificationError as exc:
            raise ValueError(str(exc)) from None
        return event

    return standard, "standardwebhooks"


def describe_delivery(event: dict[str, Any]) -> str:
    """One line per step as the merchant sees it: type, intent, sequence, funding."""
    intent = event.get("intent") or {}
    funding = (event.get("data") or {}).get("funding") or {}
    status = funding.get("status") or intent.get("funding_status") or "-"
    return (
        f"webhook {event.get('type')} intent #{intent.get('id')} "
        f"seq {event.get('sequence')} funding {status} [{intent.get('intent_status')}]"
    )


@dataclass
class Receiver:
    """The merchant's endpoint; ``on_event`` sees each new verified event once."""

    on_event: Callable[[dict[str, Any]], None] = lambda _: None
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    duplicates: int = 0
    refused: int = 0
    library: str = ""
    _verify: Verifier | None = None
    _runner: web.AppRunner | None = None
    _registered: tuple[str, str, str] | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    """Set whenever a new verified event arrives."""
    port: int = 0

    async def start(self) -> str:
        """Listen on a free localhost port; the URL to register."""
        app = web.Application()
        app.router.add_post("/hooks/intentd", self._receive)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])
        return f"http://127.0.0.1:{self.port}/hooks/intentd"

    def use_secret(self, secret: str) -> None:
        self._verify, self.library = verifier_for(secret)

    def register(self, api: str, key: str) -> dict[str, Any]:
        """Register this receiver for every event type with ``key``'s client; the
        endpoint (without its secret, which only the receiver keeps)."""
        endpoint = register(api, key, f"http://127.0.0.1:{self.port}/hooks/intentd")
        self.use_secret(endpoint.pop("secret"))
        self._registered = (api, key, str(endpoint["id"]))
        return endpoint

    async def stop(self) -> None:
        """Delete the registered endpoint, then stop listening."""
        if self._registered is not None:
            await asyncio.to_thread(unregister, *self._registered)
            self._registered = None
        if self._runner is not None:
            await self._runner.cleanup()

    async def _receive(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = {k.lower(): v for k, v in request.headers.items()}
        if self._verify is None:
            self.refused += 1
            return web.Response(status=503)
        try:
            event = self._verify(body, headers)
        except ValueError:
            self.refused += 1
            return web.Response(status=401)
        msg_id = headers["webhook-id"]
        if msg_id in self.events:
            self.duplicates += 1
        else:
            self.events[msg_id] = event
            self.arrived.set()
            self.on_event(event)
        return web.Response(status=204)

    def missing(self, expected: Iterable[str]) -> set[str]:
        """The ids of ``expected`` that have not arrived with a valid signature."""
        return set(expected) - set(self.events)

    def sequences(self, intent_id: int) -> list[int]:
        return sorted(
            int(e["sequence"])
            for e in self.events.values()
            if (e.get("intent") or {}).get("id") == intent_id
        )


def register(api: str, key: str, url: str) -> dict[str, Any]:
    """``POST /api/v1/webhooks`` for every event type; the endpoint with its secret."""
    request = urllib.request.Request(  # noqa: S310 (the API's http URL, from the config)
        f"{api}/api/v1/webhooks",
        data=json.dumps({"url": url, "description": "intentd demo merchant"}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            endpoint: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"webhook registration failed: {exc.code} {exc.read().decode()}") from None
    return endpoint


def unregister(api: str, key: str, endpoint_id: str) -> None:
    """``DELETE /api/v1/webhooks/{id}``; a failure is reported, not raised."""
    request = urllib.request.Request(  # noqa: S310 (the API's http URL, from the config)
        f"{api}/api/v1/webhooks/{endpoint_id}",
        method="DELETE",
        headers={"Authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10):  # noqa: S310
            pass
    except OSError as exc:
        print(f"could not delete webhook endpoint {endpoint_id}: {exc}", flush=True)


async def wait_signed(receiver: Receiver, expected: set[str], within: float) -> set[str]:
    """Wait up to ``within`` seconds until every id of ``expected`` arrived signed; the
    ids still missing."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within):
            while receiver.missing(expected):
                receiver.arrived.clear()
                await receiver.arrived.wait()
    return receiver.missing(expected)
