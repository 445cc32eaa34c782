"""Process life: roles in one TaskGroup, SIGTERM drains, health and metrics served.

A *role* is ``async def role(stop: asyncio.Event) -> None``: it takes work until
``stop`` is set, finishes what it holds, releases its resources and returns. A role
that raises ends the process with an error (the supervisor restarts it), after the
other roles are cancelled. A role still running ``drain_seconds`` after ``stop``
(default :data:`DRAIN_SECONDS`), or still running at a second signal, is cancelled,
so its ``finally`` blocks still run; the process then exits normally (status 0),
within :data:`STOP_MARGIN` of the drain deadline. Signals: ``intentd.stopping``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from intentd.stopping import Stopping, StopRequest

Role = Callable[[asyncio.Event], Coroutine[Any, Any, None]]
log = structlog.get_logger()

DRAIN_SECONDS = 20.0
"""How long roles may take to finish after stop before they are cancelled (the
default; processes of roles take ``process.drain_seconds``)."""
STOP_MARGIN = 10.0
"""Seconds after the drain deadline by which a process has exited: a cancelled role
closing its Kafka consumer (at most 3 s), then the producer and the pool (3 s each),
then the interpreter's exit. Supervisors must allow ``drain_seconds`` plus this
before SIGKILL (docs/operations.md, Stopping; checked in tests/unit/test_deploy.py)."""


class Readiness:
    """Names of the roles that are ready; ``/readyz`` answers 200 when all are."""

    def __init__(self) -> None:
        self._expected: set[str] = set()
        self._ready: set[str] = set()

    def expect(self, name: str) -> None:
        self._expected.add(name)

    def ready(self, name: str) -> None:
        self._ready.add(name)

    def unready(self, name: str) -> None:
        """``name`` is expected again (a role starting over, or waiting for a dependency)."""
        self._ready.discard(name)

    def missing(self) -> list[str]:
        return sorted(self._expected - self._ready)


READINESS = Readiness()


async def run_roles(
    roles: Sequence[Role],
    *,
    metrics_port: int | None = None,
    registry: CollectorRegistry = REGISTRY,
    drain_seconds: float = DRAIN_SECONDS,
    stopping: Stopping | None = None,
) -> None:
    """Run ``roles`` until ``stopping.stop`` (without ``stopping``: until SIGTERM/SIGINT)
    or until one fails; serve the health endpoint with ``registry``'s metrics on
    ``metrics_port`` if given. Roles still running ``drain_seconds`` after stop, or
    when ``stopping.now`` is set (a second signal), are cancelled."""
    if stopping is None:
        with StopRequest().watching() as own:
            await run_roles(
                roles,
                metrics_port=metrics_port,
                registry=registry,
                drain_seconds=drain_seconds,
                stopping=own,
            )
        return
    async with asyncio.TaskGroup() as group:
        if metrics_port is not None:
            group.create_task(serve_health(metrics_port, stopping.stop, registry))
        running = [group.create_task(role(stopping.stop)) for role in roles]
        group.create_task(_drain_deadline(stopping, running, drain_seconds))


async def _drain_deadline(
    stopping: Stopping, running: list[asyncio.Task[None]], seconds: float
) -> None:
    """Once ``stopping.stop`` is set, cancel the roles still running after ``seconds``
    or once ``stopping.now`` is set; return early when every role has returned."""
    pending: set[asyncio.Future[Any]] = set(running)
    stop = stopping.stop
    stopping_soon: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        while pending and not stop.is_set():
            _, waiting = await asyncio.wait(
                {stopping_soon, *pending}, return_when=asyncio.FIRST_COMPLETED
            )
            pending = waiting - {stopping_soon}
    finally:
        stopping_soon.cancel()
    if not pending:
        return
    hurry: asyncio.Future[Any] = asyncio.ensure_future(stopping.now.wait())
    try:
        deadline = asyncio.get_running_loop().time() + seconds
        while pending and not stopping.now.is_set():
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            _, waiting = await asyncio.wait(
                {hurry, *pending}, timeout=left, return_when=asyncio.FIRST_COMPLETED
            )
            pending = waiting - {hurry}
    finally:
        hurry.cancel()
    if pending:
        log.warning(
            "roles did not stop within the drain deadline; cancelling them"
            if not stopping.now.is_set()
            else "stopping now: cancelling the roles still running",
            roles=len(pending),
            drain_seconds=seconds,
        )
        for task in pending:
            task.cancel()


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
