"""Running a role's tasks through dependency outages: one mechanism for every role.

:func:`supervise` runs a task (a body ``async def body(stop)``) until it returns, and
decides what each exception it raises means (a :data:`~.dependencies.Diagnose`,
``adapters.diagnosis.diagnose`` in the roles):

- an **outage** of a dependency: reported to the process's :class:`~.health.Health`
  (which logs the outage's few lines and makes the process not ready); the task waits
  for the dependency to answer again and for its own backoff (``restart``: bounded
  and jittered, longer after each failure that follows a start without progress),
  then starts again; for as long as the outage lasts;
- a **transient** failure (a lost race): the same, without waiting for a dependency;
- a **configuration** error: :class:`~intentd.settings.ConfigError` is raised (the
  process exits 2, naming the key);
- a **bug**: raised as it is (the process exits 1).

Either of the last two makes the process not ready at once and bounds its exit
(``runtime.exit_within``): no task hanging in its cancellation keeps a failed process
half alive. A failure while ``stop`` is set ends the task quietly (it was stopping).

A body starts again from nothing: it builds its objects again and resumes from its
durable state (a lease taken again, a cursor read, a consumer joining its group), as a
new process would; a body that cannot start over from any point must not be supervised
as one piece.

Inside a supervised body, the loop reports with functions that do nothing outside one
(unit tests on fakes): :func:`progress` after each round (its stall bound),
:func:`report` when it met a dependency's failure it rides out by itself (it retries:
counted in the outage, not logged on its own), and :func:`answered` when a call to a
dependency without a probe succeeded again (the end of that outage).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TypeVar

import structlog

from intentd import observability as metrics
from intentd.backoff import Backoff
from intentd.runtime import READINESS
from intentd.settings import ConfigError
from intentd.supervision.dependencies import (
    TRANSIENT,
    Dependency,
    Diagnose,
    Diagnosis,
    Kind,
    worst,
)
from intentd.supervision.health import Health
from intentd.supervision.outage_log import describe
from intentd.wait import Stopped, until_stopped, wait_any

__all__ = [
    "CALM_AFTER",
    "RESTART",
    "answered",
    "progress",
    "report",
    "supervise",
    "until_done",
]

log = structlog.get_logger()
_T = TypeVar("_T")

RESTART = Backoff(0.5, cap=10.0, jitter=0.5)
"""A task's pause before it starts again: 0.5 s doubling to 10 s after failures in a
row, plus up to 0.5 s at random (after an outage it also waits for the dependency, so
a task back within seconds of it: events flow again well under 10 s)."""
CALM_AFTER = 60.0
"""A task that ran this long, or made progress, before it failed starts its backoff over."""

_CURRENT: ContextVar[tuple[Health, str] | None] = ContextVar("intentd_task", default=None)
_REPORTED = "_intentd_reported"
"""Set on an exception that made the process fail already (an outer supervisor of the
same exception does not report it again)."""


def progress() -> None:
    """The current supervised task made progress (a round of its loop is done)."""
    current = _CURRENT.get()
    if current is not None:
        current[0].beat(current[1])


def report(dependency: Dependency, error: BaseException) -> None:
    """The current task met a failure of ``dependency`` and retries by itself: part of
    the dependency's outage (logged as such), not a line of its own."""
    current = _CURRENT.get()
    if current is None:
        log.debug("dependency failed", dependency=str(dependency), error=describe(error))
        return
    health, task = current
    health.failed(dependency, error, task=task)


def answered(dependency: Dependency) -> None:
    """The current task's call to ``dependency`` succeeded (see :meth:`Health.answered`)."""
    current = _CURRENT.get()
    if current is not None:
        current[0].answered(dependency)


def diagnosis_of(diagnose: Diagnose, error: BaseException) -> Diagnosis:
    """``diagnose(error)``, for an exception group the worst of its leaves'."""
    if isinstance(error, BaseExceptionGroup):
        return worst([diagnosis_of(diagnose, leaf) for leaf in error.exceptions])
    return diagnose(error)


async def supervise(
    name: str,
    body: Callable[[asyncio.Event], Awaitable[None]],
    stop: asyncio.Event,
    *,
    health: Health,
    diagnose: Diagnose,
    restart: Backoff = RESTART,
    stall_after: float | None = None,
    readiness: str | None = None,
) -> None:
    """Run ``body(stop)`` until it returns or ``stop`` is set, starting it again after
    each outage or transient failure (see the module). ``stall_after``: the seconds it
    may go without :func:`progress` before the process is not ready; ``readiness``: the
    name the body marks ready (``READINESS``), unmarked while it starts over."""
    failures = 0
    while True:
        started = time.monotonic()
        health.begin(name, stall_after=stall_after)
        token = _CURRENT.set((health, name))
        diagnosis: Diagnosis | None
        try:
            await body(stop)
        except asyncio.CancelledError:
            if _really_cancelled(stop):
                raise
            # A cancellation leaked out of a library's cleanup: the task did not end, it
            # failed; a task group would take it for a stop and let the role live on.
            log.warning("task ended cancelled without a stop; starting it again", task=name)
            diagnosis = TRANSIENT
        except Exception as exc:
            diagnosis = _settle(name, exc, stop, health, diagnose)
            if diagnosis is None:
                return
        else:
            return
        finally:
            _CURRENT.reset(token)
            calm = time.monotonic() - started >= CALM_AFTER or health.made_progress(name)
            health.end(name)
        if readiness is not None:
            READINESS.unready(readiness)
        assert diagnosis is not None
        failures = 1 if calm else failures + 1
        metrics.TASK_RESTARTS.labels(name, diagnosis.kind.value).inc()
        if not await _pause(diagnosis, restart.delay(failures), stop, health):
            return


async def until_done(
    name: str,
    step: Callable[[], Awaitable[_T]],
    stop: asyncio.Event,
    *,
    health: Health,
    diagnose: Diagnose,
    restart: Backoff = RESTART,
) -> _T:
    """``await step()``, tried again after each outage or transient failure as
    :func:`supervise` does (a connection to open, a client to start); :class:`Stopped`
    if ``stop`` comes first (the step in hand is cancelled)."""
    failures = 0
    while True:
        try:
            return await until_stopped(step(), stop)
        except Stopped:
            raise
        except Exception as exc:
            diagnosis = _settle(name, exc, stop, health, diagnose)
            if diagnosis is None:
                raise Stopped(f"stopped while {name} failed") from exc
        failures += 1
        if not await _pause(diagnosis, restart.delay(failures), stop, health):
            raise Stopped(f"stopped while {name} waited")


def _settle(
    name: str, exc: Exception, stop: asyncio.Event, health: Health, diagnose: Diagnose
) -> Diagnosis | None:
    """What to do about ``exc``: the diagnosis to ride out, None if stopping; raises
    what ends the process (after making it not ready and bounding its exit)."""
    diagnosis = diagnosis_of(diagnose, exc)
    if diagnosis.kind in (Kind.BUG, Kind.CONFIGURATION) and _reported(exc):
        raise exc  # an inner supervisor made the process fail already
    if diagnosis.kind is Kind.BUG:
        health.fail(name, exc, exit_status=1)
        _mark_reported(exc)
        raise exc
    if diagnosis.kind is Kind.CONFIGURATION:
        error = exc if isinstance(exc, ConfigError) else ConfigError(diagnosis.message)
        health.fail(name, error, exit_status=2)
        _mark_reported(error)
        if error is exc:
            raise exc
        raise error from exc
    if stop.is_set():
        log.info("task failed while stopping", task=name, error=describe(exc))
        return None
    if diagnosis.dependency is not None:
        health.failed(diagnosis.dependency, exc, task=name)
    else:
        log.warning("task failed; starting it again", task=name, error=describe(exc))
    return diagnosis


def _really_cancelled(stop: asyncio.Event) -> bool:
    """Whether the current task is being cancelled (by its caller) or stopping."""
    current = asyncio.current_task()
    return stop.is_set() or (current is not None and current.cancelling() > 0)


def _reported(exc: BaseException) -> bool:
    """Whether an inner supervisor reported ``exc`` (a leaf of a group) already."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_reported(leaf) for leaf in exc.exceptions)
    return bool(getattr(exc, _REPORTED, False))


def _mark_reported(exc: BaseException) -> None:
    with contextlib.suppress(AttributeError):  # an exception without a __dict__: reported twice
        setattr(exc, _REPORTED, True)


async def _pause(diagnosis: Diagnosis, delay: float, stop: asyncio.Event, health: Health) -> bool:
    """Wait ``delay`` seconds, then for the failed dependency; False if ``stop`` came."""
    if await wait_any(stop, within=delay):
        return False
    if diagnosis.dependency is not None and not await health.wait_up(diagnosis.dependency, stop):
        return False
    return not stop.is_set()
