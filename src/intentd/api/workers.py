"""``intentd api --workers N``: N worker processes on one port, watched by their parent.

The parent serves no requests. It starts N workers (``intentd api --worker``), each
listening on the API port with ``SO_REUSEPORT`` (the kernel spreads connections), and
serves the health endpoint on ``observability.metrics_port`` for all of them:

- ``/metrics`` sums the workers' figures. Each worker writes its metric values to
  files of a directory the parent made for this run (prometheus_client's
  multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR``); the parent reads them all.
  Counters and histograms add up over workers; only the API's families are shown.
  The directory is removed when the parent exits (a parent killed with SIGKILL
  leaves it behind, in the system's temporary directory).
- ``/readyz`` is 200 while every worker says it is ready. A worker writes one byte
  on a pipe the parent gave it (``INTENTD_READY_FD``) each time its readiness
  changes: ``r`` once it serves, ``n`` while PostgreSQL is down (its ``Health``),
  ``r`` again once it answers. A worker not ready for the first time within
  ``READY_TIMEOUT`` counts as dead: it would listen on the port without serving.

A worker that exits while the parent is not stopping ends the parent too, with an
error, after it stopped the other workers: the service manager (systemd,
Kubernetes) restarts the whole, rather than the parent hiding a crash loop. SIGTERM
to the parent stops the workers (SIGTERM, graceful) and then the parent. On Linux a
worker also gets SIGTERM when its parent dies (``die_with_parent``, the worker's
first step), so no orphan keeps the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from intentd.runtime import READINESS, Role

__all__ = [
    "READY_FD_ENV",
    "WorkerDied",
    "die_with_parent",
    "multiprocess_registry",
    "report_readiness",
    "supervise_workers",
]

log = structlog.get_logger()
READY_FD_ENV = "INTENTD_READY_FD"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
PARENT_PID_ENV = "INTENTD_API_PARENT_PID"
READY_NAME = "api-workers"
READY_TIMEOUT = 120.0
"""Seconds a worker may take to start serving; after that the parent gives up (a
worker listening on the shared port but never serving would get connections)."""
STOP_TIMEOUT = 20.0
"""Seconds all the workers together get to stop (systemd and Kubernetes give 30)."""
API_FAMILIES = ("intentd_api_", "intentd_intent")


class WorkerDied(RuntimeError):
    """A worker exited while the parent was not stopping."""


class _ParentPipe:
    """The write end of the readiness pipe, taken from the environment at first use."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._taken = False

    def write(self, ready: bool) -> None:
        if not self._taken:
            self._taken = True
            fd = os.environ.pop(READY_FD_ENV, None)
            self._fd = int(fd) if fd is not None else None
        if self._fd is not None:
            with contextlib.suppress(OSError):  # the parent is gone: it stops us anyway
                os.write(self._fd, b"r" if ready else b"n")


_PARENT = _ParentPipe()


def report_readiness(ready: bool) -> None:
    """In a worker: tell the parent whether this worker serves now (no-op outside a
    worker)."""
    _PARENT.write(ready)


def multiprocess_registry(directory: str) -> CollectorRegistry:
    """The workers' API figures, summed, from their files in ``directory``."""
    registry = CollectorRegistry()
    registry.register(_ApiFamilies(directory))
    return registry


class _ApiFamilies(Collector):
    """The API's metric families of ``MultiProcessCollector``: every module's metrics
    exist in each worker, but only the API's mean anything there (the others would
    show as zeros per worker pid)."""

    def __init__(self, directory: str) -> None:
        self._all = MultiProcessCollector(None, path=directory)  # type: ignore[no-untyped-call]

    def collect(self) -> Iterable[Metric]:
        families: Iterable[Metric] = self._all.collect()  # type: ignore[no-untyped-call]
        return [family for family in families if family.name.startswith(API_FAMILIES)]


def supervise_workers(
    command: Sequence[str], count: int, directory: str, env: Mapping[str, str]
) -> Role:
    """The parent's role: run ``count`` workers (``command``, with ``env`` added to the
    environment) until stop or one dies; the caller removes ``directory``."""

    async def role(stop: asyncio.Event) -> None:
        READINESS.expect(READY_NAME)
        environment = {
            **os.environ,
            **env,
            MULTIPROC_ENV: directory,
            PARENT_PID_ENV: str(os.getpid()),
        }
        workers: list[asyncio.subprocess.Process] = []
        readers: list[_WorkerReadiness] = []
        try:
            for _ in range(count):
                process, reader = await _start(
                    command, environment, lambda: _report(readers, count)
                )
                workers.append(process)
                readers.append(reader)
            waits: dict[asyncio.Future[Any], asyncio.subprocess.Process] = {
                asyncio.ensure_future(p.wait()): p for p in workers
            }
            all_ready = asyncio.ensure_future(_all_ready(readers))
            stopping = asyncio.ensure_future(stop.wait())
            watched: set[asyncio.Future[Any]] = {stopping, all_ready, *waits}
            while True:
                done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
                if done == {all_ready}:
                    all_ready.result()  # raises WorkerDied if one never got ready
                    watched.discard(all_ready)
                    continue
                break
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
                reader.close()
        log.info("api workers stopped", workers=count)

    return role


async def _start(
    command: Sequence[str], env: dict[str, str], changed: Callable[[], None]
) -> tuple[asyncio.subprocess.Process, _WorkerReadiness]:
    read_end, write_end = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *command, env={**env, READY_FD_ENV: str(write_end)}, pass_fds=(write_end,)
        )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    log.info("api worker started", pid=process.pid)
    return process, _WorkerReadiness(read_end, changed)


class _WorkerReadiness:
    """What one worker last said on its pipe, read on the event loop (no thread).

    ``first`` is True once the worker first said ``r``, False if it closed the pipe
    before; ``ready`` is its last word; ``changed`` is called after each word."""

    def __init__(self, fd: int, changed: Callable[[], None]) -> None:
        self._fd = fd
        self._changed = changed
        self._loop = asyncio.get_running_loop()
        self.first: asyncio.Future[bool] = self._loop.create_future()
        self.ready = False
        self._open = True
        self._loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, 64)
        except OSError:
            data = b""
        if not data:  # the worker exited (its parent's wait sees it)
            self.ready = False
            if not self.first.done():
                self.first.set_result(False)
            self.close()
            return
        self.ready = data[-1:] == b"r"
        if self.ready and not self.first.done():
            self.first.set_result(True)
        self._changed()

    @property
    def started(self) -> bool:
        """The worker said ``r`` once (it serves, or served)."""
        return self.first.done() and not self.first.cancelled() and self.first.result()

    def close(self) -> None:
        if self._open:
            self._open = False
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
        if not self.first.done():
            self.first.cancel()


def _report(readers: list[_WorkerReadiness], count: int) -> None:
    """The parent is ready while all ``count`` workers have started and each is ready."""
    if len(readers) == count and all(r.started and r.ready for r in readers):
        READINESS.ready(READY_NAME)
    else:
        READINESS.unready(READY_NAME)


async def _all_ready(readers: list[_WorkerReadiness]) -> None:
    try:
        answers = await asyncio.wait_for(asyncio.gather(*(r.first for r in readers)), READY_TIMEOUT)
    except TimeoutError:
        raise WorkerDied(f"an api worker was not ready within {READY_TIMEOUT:.0f} s") from None
    if not all(answers):
        raise WorkerDied("an api worker exited before it was ready")
    _report(readers, len(readers))
    log.info("api workers ready", workers=len(readers))


async def _stop_all(workers: list[asyncio.subprocess.Process]) -> None:
    """SIGTERM to every worker; those still running after ``STOP_TIMEOUT`` in all are
    killed (under the service manager's own stop timeout)."""
    for process in workers:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
    waits = [asyncio.ensure_future(process.wait()) for process in workers]
    if waits:
        await asyncio.wait(waits, timeout=STOP_TIMEOUT)
    for process in workers:
        if process.returncode is None:
            log.warning("api worker did not stop; killing it", pid=process.pid)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def die_with_parent() -> None:
    """In a worker, first thing: SIGTERM when the parent dies (Linux ``prctl``), and
    exit at once if the parent is already gone (it died before the ``prctl``), so that
    no orphan keeps the port."""
    parent = os.environ.pop(PARENT_PID_ENV, None)
    if parent is None:
        return
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != int(parent):
        raise SystemExit("intentd api worker: the parent process is gone")
