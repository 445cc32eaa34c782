"""Process life: roles in one TaskGroup, SIGTERM drains, health and metrics served.

A *role* is ``async def role(stop: asyncio.Event) -> None``: it takes work until
``stop`` is set, finishes what it holds, releases its resources and returns. A role
that raises (or ends cancelled though nothing stopped it) ends the process with an
error (the supervisor restarts it), after the other roles are cancelled; the process
is not ready from that moment, and a daemon exits within :data:`EXIT_DEADLINE` even if
a task hangs in its cancellation (:func:`exit_within`). Roles ride out dependency
outages themselves (``intentd.supervision``): only a bug or a configuration error
ends one. A role still running ``drain_seconds`` after ``stop``
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
    """What a process waits for before it is ready; ``/readyz`` answers 200 when nothing.

    The names of the roles expected and not yet (or no longer) ready, the reasons of
    each check added (a dependency down, a task making no progress:
    ``intentd.supervision``), and whether the process failed (it is exiting).
    """

    def __init__(self) -> None:
        self._expected: set[str] = set()
        self._ready: set[str] = set()
        self._checks: list[Callable[[], list[str]]] = []
        self._failed: str | None = None

    def expect(self, name: str) -> None:
        self._expected.add(name)

    def ready(self, name: str) -> None:
        self._ready.add(name)

    def unready(self, name: str) -> None:
        """``name`` is expected again (a role starting over)."""
        self._ready.discard(name)

    def add_check(self, check: Callable[[], list[str]]) -> None:
        """``check()`` names what is not ready (nothing: ready); asked at each ``/readyz``."""
        self._checks.append(check)

    def remove_check(self, check: Callable[[], list[str]]) -> None:
        if check in self._checks:
            self._checks.remove(check)

    def fail(self, reason: str) -> None:
        """The process failed and is exiting: never ready again."""
        if self._failed is None:
            self._failed = reason

    def missing(self) -> list[str]:
        found = sorted(self._expected - self._ready)
        for check in self._checks:
            found += check()
        if self._failed is not None:
            found.append(f"failed: {self._failed}")
        return found


READINESS = Readiness()

EXIT_DEADLINE = STOP_MARGIN
"""Seconds a process that failed (a bug, a configuration error found while running) may
take to cancel its roles and close; past them it exits at once (:func:`exit_within`)."""


def _exit_now(code: int) -> None:  # pragma: no cover - ends the process
    import os
    import sys

    log.error(
        "the process did not wind down after a failure; exiting now",
        exit_status=code,
        seconds=EXIT_DEADLINE,
    )
    sys.stderr.flush()
    os._exit(code)


_exit_armed: asyncio.TimerHandle | None = None


def exit_within(
    code: int, seconds: float = EXIT_DEADLINE, *, exit_now: Callable[[int], None] = _exit_now
) -> None:
    """Make sure the process ends with ``code`` within ``seconds``: a task that failed
    for good must never leave it half alive (a task hanging in its cancellation, a
    health endpoint still serving). The normal path (the roles cancelled, the pool and
    the producer closed, the exception reaching ``main``) usually wins; this is the
    bound. Idempotent: the first call's code and deadline hold."""
    global _exit_armed  # noqa: PLW0603 - one deadline per process
    if _exit_armed is not None and not _exit_armed.cancelled():
        return
    _exit_armed = asyncio.get_running_loop().call_later(seconds, exit_now, code)


def disarm_exit() -> None:
    """Cancel the deadline of :func:`exit_within` (tests, which run many roles in a row)."""
    global _exit_armed  # noqa: PLW0603 - one deadline per process
    if _exit_armed is not None:
        _exit_armed.cancel()
        _exit_armed = None


async def run_roles(
    roles: Sequence[Role],
    *,
    metrics_port: int | None = None,
    registry: CollectorRegistry = REGISTRY,
    drain_seconds: float = DRAIN_SECONDS,
    stopping: Stopping | None = None,
    on_failure: Callable[[int], None] | None = None,
) -> None:
    """Run ``roles`` until ``stopping.stop`` (without ``stopping``: until SIGTERM/SIGINT)
    or until one fails; serve the health endpoint with ``registry``'s metrics on
    ``metrics_port`` if given. Roles still running ``drain_seconds`` after stop, or
    when ``stopping.now`` is set (a second signal), are cancelled. A role that fails
    makes the process not ready and calls ``on_failure(1)`` (a daemon's:
    :func:`exit_within`)."""
    if stopping is None:
        with StopRequest().watching() as own:
            await run_roles(
                roles,
                metrics_port=metrics_port,
                registry=registry,
                drain_seconds=drain_seconds,
                stopping=own,
                on_failure=on_failure,
            )
        return
    async with asyncio.TaskGroup() as group:
        if metrics_port is not None:
            group.create_task(serve_health(metrics_port, stopping.stop, registry))
        running = [group.create_task(_guarded(role, stopping)) for role in roles]
        for task in running:
            task.add_done_callback(lambda done: _failed(done, on_failure))
        group.create_task(_drain_deadline(stopping, running, drain_seconds))


class RoleCancelled(Exception):
    """A role ended cancelled though nothing stopped or cancelled it (a cancellation
    leaked from a library or a task group): a failure, not a stop."""


async def _guarded(role: Role, stopping: Stopping) -> None:
    """``role(stop)``; a cancellation that comes neither from a stop nor from this
    process's own deadline is raised as :class:`RoleCancelled`: a task group ignores a
    cancelled child, and the process would live on with the role gone (on Python 3.11 a
    task group whose child fails after its body ended leaves its parent a pending
    cancellation, which a later ``await`` in the role's cleanup can raise)."""
    try:
        await role(stopping.stop)
    except asyncio.CancelledError:
        if stopping.stop.is_set():
            raise
        raise RoleCancelled("a role ended cancelled; it was not stopped") from None


def _failed(task: asyncio.Task[None], on_failure: Callable[[int], None] | None) -> None:
    """A role that raised makes the process not ready at once and, in a daemon, bounds
    its exit (``on_failure``: :func:`exit_within`)."""
    if task.cancelled() or task.exception() is None:
        return
    READINESS.fail("a role failed")
    if on_failure is not None:
        on_failure(1)


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
            {"status": "ready" if not missing else "not ready", "waiting_for": missing},
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
