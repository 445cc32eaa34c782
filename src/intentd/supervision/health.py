"""One process's view of its dependencies and of its tasks' progress: one for every role.

:class:`Health` knows, for each dependency the process's roles use (the API's included),
whether it answers:

- while it answers, its probe (``SELECT 1``, a Kafka metadata request,
  ``eth_blockNumber``) runs every ``Cadence.every`` seconds, and at once when a task
  reports a failure of it (:meth:`Health.failed`), a use of it went unanswered
  (:meth:`Health.missed`: an API request's) or something suggests one
  (:meth:`Health.suspect`: a Kafka client's error line); each probe is bounded by
  ``Cadence.timeout`` (a stalled server counts as down). One probe per dependency and
  process: each role says how closely it needs it watched (:meth:`Health.watch`) and
  the closest of their cadences is kept (the API's PostgreSQL: every second);
- from the first failure (a task's or the probe's; a request's broken connection alone
  is none, the probe decides) it is down: the process is not ready,
  ``intentd_dependency_up`` is 0, its listeners hear it (:meth:`Health.listen`: the API
  answers 503 at once and tells the parent of ``api --workers N``), and the probe runs
  again after a bounded backoff (``Cadence.retry``) until it answers; then it is up
  again and every task waiting for it (:meth:`Health.wait_up`) resumes. A dependency
  without a probe (a chain's RPC read by the lifecycle's verifier) is up again when a
  task says it answered (:meth:`Health.answered`).

Its outages are logged as :mod:`~intentd.supervision.outage_log` says: a first line,
a summary every 30 s, a last line with the duration. The tasks it supervises
(``supervision.tasks``) tell it of their progress: one that made none for longer than
its bound while every dependency answered is *stalled* (one line,
``intentd_task_stalled``, not ready) until it does (``supervision.progress``).

``/readyz`` asks :meth:`Health.not_ready` while :meth:`run` runs. A task that fails for
good (:meth:`Health.fail`) makes the process not ready for good and, in a daemon,
bounds its exit (``runtime.exit_within``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from intentd import observability as metrics
from intentd.backoff import Backoff
from intentd.runtime import Readiness
from intentd.supervision.cadence import (
    MIN_GAP,
    PROBE_EVERY,
    PROBE_TIMEOUT,
    RETRY,
    Cadence,
    Probe,
)
from intentd.supervision.dependencies import Dependency
from intentd.supervision.outage_log import SUMMARY_EVERY, OutageLog, describe, emit
from intentd.supervision.progress import TaskProgress
from intentd.wait import Stopped, until_stopped, wait_any

__all__ = ["Health"]

log = structlog.get_logger()

TICK = 1.0
"""Seconds between two looks at outage durations, summaries and stalled tasks."""


@dataclass(slots=True)
class _Watched:
    dependency: Dependency
    probe: Probe | None
    cadence: Cadence
    log: OutageLog
    up: asyncio.Event = field(default_factory=asyncio.Event)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    probed_at: float = -1e9
    failures: int = 0
    """Probes failed in a row."""
    listeners: list[Callable[[bool], None]] = field(default_factory=list)


class Health:
    def __init__(
        self,
        *,
        probe_every: float = PROBE_EVERY,
        probe_timeout: float = PROBE_TIMEOUT,
        retry: Backoff = RETRY,
        summary_every: float = SUMMARY_EVERY,
        min_gap: float = MIN_GAP,
        tick: float = TICK,
        clock: Callable[[], float] = time.monotonic,
        readiness: Readiness | None = None,
        on_failure: Callable[[int], None] | None = None,
    ) -> None:
        """``probe_every``, ``probe_timeout``, ``retry``, ``min_gap``: the cadence of a
        dependency watched without one of its own; ``readiness``: where ``/readyz``
        reads it (a process's: ``runtime.READINESS``; by default one of its own);
        ``on_failure(exit_status)``: what a task that failed for good does to the
        process (a process's: ``runtime.exit_within``)."""
        self._cadence = Cadence(probe_every, probe_timeout, retry, min_gap)
        self._summary_every = summary_every
        self._tick = tick
        self._clock = clock
        self._readiness = readiness if readiness is not None else Readiness()
        self._on_failure = on_failure
        self._watched: dict[Dependency, _Watched] = {}
        self._progress = TaskProgress(clock)

    # --- dependencies ---------------------------------------------------------------

    def watch(
        self, dependency: Dependency, probe: Probe | None = None, *, cadence: Cadence | None = None
    ) -> None:
        """Follow ``dependency``, probed by ``probe`` (the first given: one per process)
        while :meth:`run` runs, at least as closely as ``cadence`` (by default this
        Health's); watched again, the closest of the cadences asked is kept."""
        wanted = cadence if cadence is not None else self._cadence
        watched = self._watched.get(dependency)
        if watched is not None:
            if probe is not None and watched.probe is None:
                watched.probe = probe
            if cadence is not None:
                watched.cadence = watched.cadence.closest(cadence)
                watched.wake.set()  # a probe waiting on the old cadence looks again
            return
        outages = OutageLog(dependency, summary_every=self._summary_every)
        watched = _Watched(dependency, probe, wanted, outages)
        watched.up.set()
        self._watched[dependency] = watched
        self._gauges(watched)

    def cadence(self, dependency: Dependency) -> Cadence:
        """How closely ``dependency`` is probed (this Health's default if not watched)."""
        watched = self._watched.get(dependency)
        return watched.cadence if watched is not None else self._cadence

    def listen(self, dependency: Dependency, listener: Callable[[bool], None]) -> None:
        """Call ``listener(False)`` each time ``dependency`` goes down, ``listener(True)``
        each time it is up again."""
        self.watch(dependency)
        self._watched[dependency].listeners.append(listener)

    def unlisten(self, dependency: Dependency, listener: Callable[[bool], None]) -> None:
        watched = self._watched.get(dependency)
        if watched is not None and listener in watched.listeners:
            watched.listeners.remove(listener)

    def is_down(self, dependency: Dependency) -> bool:
        watched = self._watched.get(dependency)
        return watched is not None and watched.log.down

    def failed(
        self, dependency: Dependency, error: BaseException | str, *, task: str | None = None
    ) -> None:
        """A task met a failure of ``dependency``: it is down from now (the first failure
        of an outage is logged; later ones are counted in it)."""
        self.watch(dependency)
        self._down(self._watched[dependency], describe(error), task=task)

    def missed(self, dependency: Dependency, error: BaseException | str | None) -> None:
        """A use of ``dependency`` went unanswered (an API request's broken connection;
        ``error`` None: not tried, it is known down): counted in its outage. Not an
        outage by itself: if none is known, the probe is asked at once and decides."""
        watched = self._watched.get(dependency)
        if watched is None:
            return
        watched.log.noted(describe(error) if error is not None else None)
        if not watched.log.down:
            watched.wake.set()

    def suspect(self, dependency: Dependency) -> None:
        """Something suggests ``dependency`` failed: probe it now (if it is up)."""
        watched = self._watched.get(dependency)
        if watched is not None and watched.probe is not None and not watched.log.down:
            watched.wake.set()

    def answered(self, dependency: Dependency) -> None:
        """A task's call to ``dependency`` succeeded: the end of its outage if it has no
        probe (a probe alone says when one with a probe is back)."""
        watched = self._watched.get(dependency)
        if watched is not None and watched.probe is None and watched.log.down:
            self._up(watched)

    async def wait_up(self, dependency: Dependency, stop: asyncio.Event) -> bool:
        """Wait until ``dependency`` answers again (at once if it does or has no probe);
        False if ``stop`` came first."""
        watched = self._watched.get(dependency)
        if watched is not None and watched.probe is not None:
            await wait_any(watched.up, stop, within=None)
        return not stop.is_set()

    async def probe(self, dependency: Dependency) -> bool:
        """Ask ``dependency``'s probe once, now (what :meth:`run` does on its cadence): an
        answer ends its outage, a failure (or no answer within the cadence's timeout)
        begins one or is counted in it; the outage's summary if one is due. True if it
        answered."""
        watched = self._watched[dependency]
        assert watched.probe is not None, f"{dependency} has no probe"
        watched.probed_at = self._clock()
        timeout = watched.cadence.timeout
        try:
            async with asyncio.timeout(timeout):
                await watched.probe()
        except Exception as exc:  # any failure to answer is the outage, not a bug here
            watched.failures += 1
            error = f"no answer within {timeout:g} s" if isinstance(exc, TimeoutError) else exc
            self._down(watched, describe(error))
            emit(watched.log.still(self._clock()))
            return False
        watched.failures = 0
        self._up(watched)
        return True

    # --- tasks ----------------------------------------------------------------------

    def begin(self, task: str, *, stall_after: float | None) -> None:
        """``task`` runs (again); with ``stall_after``, it must make progress within that
        (``supervision.progress``)."""
        self._progress.begin(task, stall_after=stall_after)

    def end(self, task: str) -> None:
        self._progress.end(task)

    def beat(self, task: str) -> None:
        """``task`` made progress (a round of its loop done)."""
        self._progress.beat(task)

    def made_progress(self, task: str) -> bool:
        """Whether ``task`` made progress since it began (this run)."""
        return self._progress.made_progress(task)

    def fail(self, task: str, error: BaseException, *, exit_status: int) -> None:
        """``task`` failed for good: the process is not ready from now on and ends with
        ``exit_status`` (at the latest ``runtime.EXIT_DEADLINE`` seconds from now)."""
        if exit_status == 1:
            log.error("task failed; the process exits", task=task, exit_status=1, exc_info=error)
        else:
            log.error("task failed; the process exits", task=task, exit_status=exit_status,
                      error=describe(error))  # fmt: skip
        self._readiness.fail(task)
        if self._on_failure is not None:
            self._on_failure(exit_status)

    # --- readiness and the loops ----------------------------------------------------

    def not_ready(self) -> list[str]:
        """What keeps the process from being ready: dependencies down (those probed: the
        roles' own; one without a probe serves side work only), tasks stalled."""
        found = [
            f"{w.dependency} unavailable"
            for w in self._watched.values()
            if w.log.down and w.probe is not None  # one without: the role's side work
        ]
        found += [f"{name} makes no progress" for name in self._progress.stalled()]
        return found

    async def run(self, stop: asyncio.Event) -> None:
        """Probe the dependencies and watch the tasks until ``stop``; ``/readyz`` asks
        :meth:`not_ready` meanwhile."""
        self._readiness.add_check(self.not_ready)
        try:
            async with asyncio.TaskGroup() as group:
                for watched in list(self._watched.values()):
                    if watched.probe is not None:
                        group.create_task(self._probing(watched, stop))
                group.create_task(self._ticking(stop))
        finally:
            self._readiness.remove_check(self.not_ready)

    async def _probing(self, watched: _Watched, stop: asyncio.Event) -> None:
        while not stop.is_set():
            if watched.log.down:
                retry = watched.cadence.retry
                await wait_any(stop, within=retry.delay(max(watched.failures, 1)))
            else:
                await wait_any(stop, watched.wake, within=watched.cadence.every)
            watched.wake.clear()
            gap = watched.cadence.min_gap - (self._clock() - watched.probed_at)
            if gap > 0:
                await wait_any(stop, within=gap)
            if stop.is_set():
                return
            try:  # a probe in flight (a stalled server) does not hold the process's end
                await until_stopped(self.probe(watched.dependency), stop)
            except Stopped:
                return

    async def _ticking(self, stop: asyncio.Event) -> None:
        while not await wait_any(stop, within=self._tick):
            now = self._clock()
            for watched in self._watched.values():
                emit(watched.log.still(now))
                self._gauges(watched)
            outage = any(w.log.down and w.probe is not None for w in self._watched.values())
            self._progress.look(now, outage=outage)

    def _down(self, watched: _Watched, error: str, *, task: str | None = None) -> None:
        first = not watched.log.down
        emit(watched.log.failed(self._clock(), error, task=task))
        watched.up.clear()
        if first:
            watched.wake.set()  # a task's report: probe at once (it may be one broken connection)
            dependency = watched.dependency
            metrics.DEPENDENCY_OUTAGES.labels(dependency.kind, dependency.chain).inc()
            self._gauges(watched)
            self._tell(watched, up=False)

    def _up(self, watched: _Watched) -> None:
        line = watched.log.answered(self._clock())
        emit(line)
        watched.up.set()
        self._gauges(watched)
        if line is not None:  # an outage ended
            self._tell(watched, up=True)

    @staticmethod
    def _tell(watched: _Watched, *, up: bool) -> None:
        for listener in list(watched.listeners):
            listener(up)

    def _gauges(self, watched: _Watched) -> None:
        labels = (watched.dependency.kind, watched.dependency.chain)
        metrics.DEPENDENCY_UP.labels(*labels).set(0 if watched.log.down else 1)
        metrics.DEPENDENCY_OUTAGE_SECONDS.labels(*labels).set(
            round(watched.log.seconds(self._clock()), 1)
        )
