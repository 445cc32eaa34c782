"""``intentd api --workers N``: N worker processes on one port, watched by their parent.

The parent serves no requests. It starts N workers (``intentd api --worker``), each
listening on the API port with ``SO_REUSEPORT`` (the kernel spreads connections), and
serves the health endpoint on ``observability.metrics_port`` for all of them:

- ``/metrics`` sums the workers' figures. Each worker writes its metric values to
  files of a directory the parent made for this run (prometheus_client's
  multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR``); the parent reads them all.
  Counters and histograms add up over workers, also those of a worker that ended;
  the in-flight gauge counts live workers only. The directory is removed at exit.
- ``/readyz`` is 200 once every worker has said it is ready (one byte on a pipe
  the parent gave it, ``INTENTD_READY_FD``).

A worker that exits while the parent is not stopping ends the parent too, with an
error, after it stopped the other workers: the service manager (systemd,
Kubernetes) restarts the whole, rather than the parent hiding a crash loop. SIGTERM
to the parent stops the workers (SIGTERM, graceful) and then the parent. On Linux a
worker also gets SIGTERM when its parent dies, so no orphan keeps the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from intentd.runtime import READINESS, Role

__all__ = ["READY_FD_ENV", "WorkerDied", "notify_ready", "supervise_workers"]

log = structlog.get_logger()
READY_FD_ENV = "INTENTD_READY_FD"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
READY_NAME = "api-workers"
STOP_TIMEOUT = 30.0


class WorkerDied(RuntimeError):
    """A worker exited while the parent was not stopping."""


def notify_ready() -> None:
    """In a worker: tell the parent this worker serves (no-op outside a worker)."""
    fd = os.environ.pop(READY_FD_ENV, None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.write(int(fd), b"r")
            os.close(int(fd))


def metrics_directory() -> str:
    """A fresh directory for the workers' metric files (removed by the supervisor)."""
    return tempfile.mkdtemp(prefix="intentd-api-metrics-")


def multiprocess_registry(directory: str) -> CollectorRegistry:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    return registry


def supervise_workers(
    command: Sequence[str], count: int, directory: str, env: Mapping[str, str]
) -> Role:
    """The parent's role: run ``count`` workers (``command``, with ``env`` added to the
    environment) until stop or one dies."""

    async def role(stop: asyncio.Event) -> None:
        READINESS.expect(READY_NAME)
        environment = {**os.environ, **env, MULTIPROC_ENV: directory}
        workers: list[asyncio.subprocess.Process] = []
        readers: list[asyncio.Task[bool]] = []
        try:
            for _ in range(count):
                process, ready = await _start(command, environment)
                workers.append(process)
                readers.append(ready)
            waits: dict[asyncio.Future[Any], asyncio.subprocess.Process] = {
                asyncio.ensure_future(p.wait()): p for p in workers
            }
            all_ready = asyncio.create_task(_all_ready(readers))
            stopping = asyncio.ensure_future(stop.wait())
            done, _ = await asyncio.wait({stopping, *waits}, return_when=asyncio.FIRST_COMPLETED)
            all_ready.cancel()
            if not stop.is_set():
                # A stop signalled to the whole group may reach a worker first.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(stopping), 1.0)
            stopping.cancel()
            if not stop.is_set():
                died = next(waits[task] for task in done if task in waits)
                log.error("api worker exited", pid=died.pid, returncode=died.returncode)
                raise WorkerDied(f"api worker {died.pid} exited with {died.returncode}")
        finally:
            await _stop_all(workers)
            for reader in readers:
                reader.cancel()
            for process in workers:
                mark_process_dead(process.pid, directory)  # type: ignore[no-untyped-call]
            shutil.rmtree(directory, ignore_errors=True)
        log.info("api workers stopped", workers=count)

    return role


async def _start(
    command: Sequence[str], env: dict[str, str]
) -> tuple[asyncio.subprocess.Process, asyncio.Task[bool]]:
    read_end, write_end = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            env={**env, READY_FD_ENV: str(write_end)},
            pass_fds=(write_end,),
            preexec_fn=_die_with_parent,
        )
    finally:
        os.close(write_end)
    log.info("api worker started", pid=process.pid)
    return process, asyncio.create_task(_read_ready(read_end))


async def _read_ready(fd: int) -> bool:
    """True once the worker wrote its byte; False if it closed the pipe without."""
    try:
        data = await asyncio.get_running_loop().run_in_executor(None, os.read, fd, 1)
    finally:
        os.close(fd)
    return data == b"r"


async def _all_ready(readers: list[asyncio.Task[bool]]) -> None:
    if all(await asyncio.gather(*readers)):
        READINESS.ready(READY_NAME)
        log.info("api workers ready", workers=len(readers))


async def _stop_all(workers: list[asyncio.subprocess.Process]) -> None:
    for process in workers:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
    for process in workers:
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
        except TimeoutError:
            log.warning("api worker did not stop; killing it", pid=process.pid)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (Linux ``prctl``)."""
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)
