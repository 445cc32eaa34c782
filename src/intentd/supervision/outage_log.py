"""The log of one dependency's outages: a few lines each, however long (pure).

An outage is told in at most ``2 + duration / summary_every`` lines, whatever the
number of failures and retries in it:

- its first failure: one warning, ``dependency unavailable`` (the error's text, no
  traceback);
- while it lasts, every ``summary_every`` seconds: ``dependency still unavailable``,
  for how long and how many failures so far (and the last error);
- its end: ``dependency available again``, with the outage's duration and failures.

A failure that does not show an outage by itself (a request's broken connection: the
probe decides) is :meth:`OutageLog.noted`: counted in the outage it turns out to begin,
forgotten if the dependency answers first.

:class:`OutageLog` only decides which line is due; the caller logs it (:func:`emit`;
:class:`~intentd.supervision.health.Health`). Times are seconds of a monotonic clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from intentd.supervision.dependencies import Dependency

__all__ = ["SUMMARY_EVERY", "Line", "OutageLog", "describe", "emit"]

log = structlog.get_logger()

SUMMARY_EVERY = 30.0
"""Seconds between two summaries of an outage that goes on."""


@dataclass(frozen=True, slots=True)
class Line:
    level: str
    """``warning`` or ``info``."""
    event: str
    fields: dict[str, object] = field(default_factory=dict)


def describe(error: BaseException | str) -> str:
    """One line for a log: the exception's type and message (no traceback), bounded."""
    if isinstance(error, str):
        return error[:300]
    text, kind = str(error), type(error).__name__
    if not text:
        return kind[:300]
    return (text if text.startswith(kind) else f"{kind}: {text}")[:300]  # aiokafka's say it


def emit(line: Line | None) -> None:
    """Log ``line`` (nothing if None) at its level."""
    if line is None:
        return
    if line.level == "info":
        log.info(line.event, **line.fields)
    elif line.level == "error":
        log.error(line.event, **line.fields)
    else:
        log.warning(line.event, **line.fields)


class OutageLog:
    """The outages of ``dependency``, one at a time."""

    def __init__(self, dependency: Dependency, *, summary_every: float = SUMMARY_EVERY) -> None:
        self._dependency = dependency
        self._summary_every = summary_every
        self._since: float | None = None
        self._failures = 0
        self._last_error = ""
        self._summarized = 0.0
        self.outages = 0
        """Outages begun so far."""

    @property
    def down(self) -> bool:
        return self._since is not None

    def seconds(self, now: float) -> float:
        """How long the current outage has lasted (0 while up)."""
        return 0.0 if self._since is None else max(now - self._since, 0.0)

    def noted(self, error: str | None) -> None:
        """A failure that is no outage by itself (``error`` None: a use refused because
        the dependency is known down): counted in the outage it belongs to."""
        self._failures += 1
        if error is not None:
            self._last_error = error

    def failed(self, now: float, error: str, *, task: str | None = None) -> Line | None:
        """A failure at ``now``: the first line of an outage, or None (counted in it)."""
        self.noted(error)
        if self._since is not None:
            return None
        self._since = self._summarized = now
        self.outages += 1
        fields = self._labels() | {"error": error}
        if task is not None:
            fields["task"] = task
        return Line("warning", "dependency unavailable", fields)

    def still(self, now: float) -> Line | None:
        """The summary line if one is due at ``now``."""
        if self._since is None or now - self._summarized < self._summary_every:
            return None
        self._summarized = now
        return Line(
            "warning",
            "dependency still unavailable",
            self._labels()
            | {
                "down_seconds": round(now - self._since, 1),
                "failures": self._failures,
                "error": self._last_error,
            },
        )

    def answered(self, now: float) -> Line | None:
        """The dependency answered at ``now``: the outage's last line, or None if up
        (failures noted meanwhile are forgotten either way)."""
        if self._since is None:
            self._failures = 0
            self._last_error = ""
            return None
        line = Line(
            "info",
            "dependency available again",
            self._labels()
            | {"outage_seconds": round(now - self._since, 1), "failures": self._failures},
        )
        self._since = None
        self._failures = 0
        self._last_error = ""
        return line

    def _labels(self) -> dict[str, object]:
        labels: dict[str, object] = {"dependency": self._dependency.kind}
        if self._dependency.chain:
            labels["chain"] = self._dependency.chain
        return labels
