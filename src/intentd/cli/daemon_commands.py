"""The long-running commands (``DAEMONS``) and ``intentd api``'s workers.

Guarantees: a daemon runs its roles under :data:`~intentd.stopping.PROCESS`'s watch and
returns 0 once stopped (``run`` migrates first unless ``--no-migrate``; a stopped
migration goes on at the next run); ``api --workers N`` (N > 1) is a parent that runs N
worker processes sharing the port and serves only metrics; every API process knows
how many workers share the rate limits.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

import structlog

from intentd.cli.one_shot import migrate_and_backfill, one_shot
from intentd.runtime import run_roles
from intentd.settings import ConfigError, Settings
from intentd.stopping import PROCESS, Stopping
from intentd.wait import Stopped, until_stopped

if TYPE_CHECKING:
    from intentd.composition.process import Roles

__all__ = ["DAEMONS", "dispatch", "run_daemon", "serve_api"]

DAEMONS = frozenset({"run", "poll", "execute", "lifecycle", "webhooks", "api"})


async def dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if args.command not in DAEMONS:
        return await one_shot(args, settings)
    with PROCESS.watching() as stopping:
        return await run_daemon(args, settings, stopping)


def serve_api(args: argparse.Namespace, settings: Settings) -> int:
    """``intentd api``: one process on uvloop, or with ``--workers N`` a parent watching
    N worker processes that share the port (``api.workers``)."""
    import uvloop

    if args.worker:
        from intentd.api.workers import die_with_parent

        die_with_parent()
    workers = args.workers or settings.api.workers
    supervise = workers > 1 and not args.worker
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(
                _supervise(args, settings, workers) if supervise else dispatch(args, settings)
            )
    except ConfigError as exc:
        print(f"intentd: {exc}", file=sys.stderr)
        return 2


async def _supervise(args: argparse.Namespace, settings: Settings, workers: int) -> int:
    import tempfile

    from intentd.api.workers import STOP_TIMEOUT, multiprocess_registry, supervise_workers

    command = [sys.executable, "-m", "intentd", "--config", args.config, "api", "--worker"]
    if args.host:
        command += ["--host", args.host]
    if args.port:
        command += ["--port", str(args.port)]
    shares = {"INTENTD__API__WORKERS": str(workers)}  # the workers' rate-limit shares
    with (
        PROCESS.watching() as stopping,
        tempfile.TemporaryDirectory(prefix="intentd-api-metrics-") as directory,
    ):
        await run_roles(
            [supervise_workers(command, workers, directory, shares)],
            metrics_port=settings.observability.metrics_port,
            registry=multiprocess_registry(directory),
            drain_seconds=STOP_TIMEOUT + 5.0,  # its own stop kills workers after STOP_TIMEOUT
            stopping=stopping,
        )
    return 0


async def run_daemon(args: argparse.Namespace, settings: Settings, stopping: Stopping) -> int:
    from intentd.composition.process import Roles, run_process  # the roles' imports are heavy

    match args.command:
        case "api":
            from intentd.api.server import bind

            if settings.hd_mnemonic is not None:
                structlog.get_logger().warning(
                    "the API holds the HD mnemonic, which it never needs; give it"
                    " INTENTD_HD_XPUB instead (docs/configuration.md, Keys)"
                )
            # A worker's parent says how many workers share the rate limits.
            settings = _with_workers(settings, settings.api.workers if args.worker else 1)
            sock = bind(
                args.host or settings.api.host,
                args.port or settings.api.port,
                reuse_port=args.worker,
            )
            await run_process(
                settings,
                Roles(api=True),
                metrics_port=None if args.worker else settings.observability.metrics_port,
                api_socket=sock,
                stopping=stopping,
            )
        case "poll":
            await _run(settings, Roles(pollers=(args.chain,)), stopping)
        case "lifecycle":
            await _run(settings, Roles(lifecycle=True), stopping)
        case "webhooks":
            await _run(settings, Roles(webhooks=True), stopping)
        case "execute":
            await _run(settings, Roles(executors=(args.chain,)), stopping)
        case "run":
            if not args.no_migrate:
                try:
                    await until_stopped(migrate_and_backfill(settings), stopping.stop)
                except Stopped:
                    return 0  # a stopped migration or backfill goes on at the next run
            settings = _with_workers(settings, 1)
            await _run(settings, Roles.everything(settings), stopping)
        case _:
            raise AssertionError(f"unhandled command {args.command}")
    return 0


def _with_workers(settings: Settings, workers: int) -> Settings:
    """``settings`` for a process of ``intentd api`` among ``workers`` (rate limits)."""
    api = settings.api.model_copy(update={"workers": workers})
    return settings.model_copy(update={"api": api})


async def _run(settings: Settings, roles: Roles, stopping: Stopping) -> None:
    from intentd.composition.process import run_process

    await run_process(
        settings, roles, metrics_port=settings.observability.metrics_port, stopping=stopping
    )
