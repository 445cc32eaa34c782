"""The progress of one process's supervised tasks: which of them is stalled.

A task (``supervision.tasks``) begins with a bound, ``stall_after``, and beats once per
round of its loop. Guarantees of :class:`TaskProgress`: a task that made no beat for
longer than its bound, looked at while no dependency was down, is *stalled*: one
warning line, ``intentd_task_stalled`` 1, and :meth:`TaskProgress.stalled` names it
(the process is not ready) until its next beat (one info line, the gauge 0 again) or
its end. Waiting for a dependency is not a stall: during an outage the bound is
counted again from the outage's end. A task without a bound is never stalled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog

from intentd import observability as metrics

__all__ = ["TaskProgress"]

log = structlog.get_logger()


@dataclass(slots=True)
class _Task:
    stall_after: float | None
    last_beat: float
    stalled: bool = False
    progressed: bool = False


class TaskProgress:
    """The tasks of one process and their last beats, on ``clock`` (seconds)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._tasks: dict[str, _Task] = {}

    def begin(self, task: str, *, stall_after: float | None) -> None:
        """``task`` runs (again); with ``stall_after``, it must make progress within that."""
        self._tasks[task] = _Task(stall_after, self._clock())

    def end(self, task: str) -> None:
        found = self._tasks.pop(task, None)
        if found is not None and found.stalled:
            metrics.TASK_STALLED.labels(task).set(0)

    def beat(self, task: str) -> None:
        """``task`` made progress (a round of its loop done)."""
        found = self._tasks.get(task)
        if found is None:
            return
        found.last_beat = self._clock()
        found.progressed = True
        if found.stalled:
            found.stalled = False
            metrics.TASK_STALLED.labels(task).set(0)
            log.info("task makes progress again", task=task)

    def made_progress(self, task: str) -> bool:
        """Whether ``task`` made progress since it began (this run)."""
        found = self._tasks.get(task)
        return found is not None and found.progressed

    def stalled(self) -> list[str]:
        """The tasks stalled now."""
        return [name for name, t in self._tasks.items() if t.stalled]

    def look(self, now: float, *, outage: bool) -> None:
        """Mark the tasks late beyond their bound at ``now`` stalled; during an ``outage``
        (a probed dependency down) every bound starts again instead."""
        for name, task in self._tasks.items():
            if outage:  # waiting for a dependency is not a stall: counted from its end
                task.last_beat = now
                continue
            late = now - task.last_beat
            if task.stall_after is None or task.stalled or late <= task.stall_after:
                continue
            task.stalled = True
            metrics.TASK_STALLED.labels(name).set(1)
            log.warning("task makes no progress", task=name, seconds=round(late, 1))
