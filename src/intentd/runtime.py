"""Process life: roles in one TaskGroup, SIGTERM drains, health and metrics served.

A *role* is ``async def role(stop: asyncio.Event) -> None``: it takes work until
``stop`` is set, finishes what it holds, releases its resources and returns. A role
that raises ends the process with an error (the supervisor restarts it), after the
other roles are cancelled. A role still running ``drain_seconds`` after ``stop``
(default :data:`DRAIN_SECONDS`, below the supervisors' 30 s before SIGKILL) is
cancelled, so its ``finally`` blocks still run; the process then exits normally.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

Role = Callable[[asyncio.Event], Coroutine[Any, Any, None]]
log = structlog.get_logger()

DRAIN_SECONDS = 20.0
"""How long roles may take to finish after stop before they are cancelled (the
default; processes of roles take ``process.drain_seconds``)."""


class Readiness:
    """Names of the roles that are ready; ``/readyz`` answers 200 when all are."""

    def __init__(self) -> None:
        self._expected: set[str] = set()
        self._ready: set[str] = set()

    def expect(self, name: str) -> None:
        self._expected.add(name)

    def ready(self, name: str) -> None:
        self._ready.add(name)

    def missing(self) -> list[str]:
        return sorted(self._expected - self._ready)


READINESS = Readiness()


async def run_roles(
    roles: Sequence[Role],
    *,
    metrics_port: int | None = None,
    registry: CollectorRegistry = REGISTRY,
    drain_seconds: float = DRAIN_SECONDS,
    stop: asyncio.Event | None = None,
) -> None:
    """Run ``roles`` until SIGTERM/SIGINT (or ``stop``, if given, is set) or until one
    fails; serve the health endpoint with ``registry``'s metrics on ``metrics_port`` if
    given. Roles still running ``drain_seconds`` after stop are cancelled."""
    stop = stop if stop is not None else asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, _on_signal, stop, sig)
    try:
        async with asyncio.TaskGroup() as group:
            if metrics_port is not None:
                group.create_task(serve_health(metrics_port, stop, registry))
            running = [group.create_task(role(stop)) for role in roles]
            group.create_task(_drain_deadline(stop, running, drain_seconds))
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


async def _drain_deadline(
    stop: asyncio.Event, running: list[asyncio.Task[None]], seconds: float
) -> None:
    """Once ``stop`` is set, cancel the roles still running after ``seconds``; return
    early when every role has returned."""
    pending: set[asyncio.Future[Any]] = set(running)
    stopping: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        while pending and not stop.is_set():
            _, waiting = await asyncio.wait(
                {stopping, *pending}, return_when=asyncio.FIRST_COMPLETED
            )
            pending = waiting - {stopping}
    finally:
        stopping.cancel()
    if not pending:
        return
    _, late = await asyncio.wait(pending, timeout=seconds)
    if late:
        log.warning(
            "roles did not stop within the drain deadline; cancelling them",
            roles=len(late),
            drain_seconds=seconds,
        )
        for task in late:
            task.cancel()


def _on_signal(stop: asyncio.Event, sig: signal.Signals) -> None:
    log.info("stopping", signal=sig.name)
    stop.set()


async def serve_health(
    port: int, stop: asyncio.Event, registry: CollectorRegistry = REGISTRY
) -> None:
    """Serve ``/metrics``, ``/healthz`` and ``/readyz`` on 127.0.0.1-or-all until stop."""

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        missing = READINESS.missing()
        return web.json_response(
            {"status": "ready" if not missing else "starting", "waiting_for": missing},
            status=200 if not missing else 503,
        )

    app = web.Application()
    app.add_routes(
        [web.get("/metrics", metrics), web.get("/healthz", healthz), web.get("/readyz", readyz)]
    )
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "0.0.0.0", port)  # noqa: S104 - scraped from outside the pod
    await site.start()
    log.info("health endpoint listening", port=port)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
