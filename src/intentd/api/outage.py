"""Whether the API can reach PostgreSQL now, and an outage told in a few log lines.

:class:`OutageLog` (pure, the clock given) decides what to say about one outage:
one line when it starts, one summary every ``every`` seconds while it lasts (how
long, how many failures, the last error), one line when it ends. Every failure in
between is counted, never logged.

:class:`DatabaseWatch` holds the API process's view. A probe (``SELECT 1`` on a
connection of its own, :class:`Probe`) asks every :data:`PROBE_INTERVAL` seconds,
whether requests arrive or not, and at once when a request found the database
away (one broken connection is not an outage: the probe decides). The database is
*away* from a failed probe until a probe is answered again; meanwhile requests are
answered 503 at once, without waiting on the pool (``api.connections``), and
``on_change`` hears each change: the role's readiness, so ``/readyz`` answers 503
while the database is away and a load balancer sends no traffic (the probe alone
brings it back, within a second of the database's return).

:class:`LibraryNoise` keeps asyncpg's own reports of the same outage out of the
logs (see there).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from intentd.wait import wait_any

__all__ = [
    "PROBE_INTERVAL",
    "DatabaseWatch",
    "LibraryNoise",
    "Note",
    "OutageLog",
    "Probe",
    "describe",
]

log = structlog.get_logger()

PROBE_INTERVAL = 1.0
"""Seconds between two probes of the database (a request's failure asks sooner)."""
PROBE_GAP = 0.1
"""Seconds at least between two probes, however many requests fail."""
SUMMARY_EVERY = 30.0
"""Seconds between two summaries of an outage that lasts."""


@dataclass(frozen=True, slots=True)
class Note:
    """One log line: its level, its event and its fields."""

    level: str
    event: str
    fields: dict[str, Any] = field(default_factory=dict)


class OutageLog:
    """The lines of ``dependency``'s outages (pure)."""

    def __init__(self, dependency: str, *, every: float = SUMMARY_EVERY) -> None:
        self._name = dependency
        self._every = every
        self._since: float | None = None
        self._said_at = 0.0
        self._failures = 0
        self._last_error = ""

    @property
    def away(self) -> bool:
        return self._since is not None

    def noted(self, error: str | None) -> None:
        """A failure (``error`` None: one refused because the dependency is known away):
        counted in the outage it belongs to."""
        self._failures += 1
        if error is not None:
            self._last_error = error

    def failed(self, now: float, error: str) -> Note | None:
        """A failure that shows the dependency away at ``now``: the outage's first line
        if it starts here, else None (counted)."""
        self.noted(error)
        if self._since is not None:
            return None
        self._since = self._said_at = now
        return Note("warning", f"{self._name} unavailable", {"error": error})

    def tick(self, now: float) -> Note | None:
        """The summary, if the outage has lasted ``every`` seconds since the last line."""
        if self._since is None or now - self._said_at < self._every:
            return None
        self._said_at = now
        return Note("warning", f"{self._name} still unavailable", self._figures(now))

    def answered(self, now: float) -> Note | None:
        """The dependency answered at ``now``: the outage's last line if one was on;
        failures noted before are forgotten either way."""
        note = None
        if self._since is not None:
            note = Note("info", f"{self._name} available again", self._figures(now))
        self._since = None
        self._failures = 0
        self._last_error = ""
        return note

    def _figures(self, now: float) -> dict[str, Any]:
        assert self._since is not None
        return {
            "seconds": round(now - self._since, 1),
            "failures": self._failures,
            "last_error": self._last_error,
        }


class Probe(Protocol):
    """Asks the database a trivial question (``adapters.db_probe.ConnectionProbe``)."""

    async def check(self) -> None:
        """Return once answered; raise if not answered (within the probe's own bound)."""
        ...

    async def close(self) -> None: ...


def describe(exc: BaseException) -> str:
    """An exception in one line: its type and message, never a traceback."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class DatabaseWatch:
    """The process's view of PostgreSQL; run :meth:`run` for as long as the API serves."""

    def __init__(
        self,
        probe: Probe,
        *,
        on_change: Callable[[bool], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float = PROBE_INTERVAL,
        every: float = SUMMARY_EVERY,
    ) -> None:
        self._probe = probe
        self._on_change = on_change
        self._clock = clock
        self._interval = interval
        self._log = OutageLog("database", every=every)
        self._asked = asyncio.Event()

    @property
    def away(self) -> bool:
        return self._log.away

    def failed(self, error: str | None) -> None:
        """A request found the database away (it is answered 503; ``error`` None: not
        asked, the database is known away): counted, and the probe asked at once if no
        outage is known yet."""
        self._log.noted(error)
        if not self._log.away:
            self._asked.set()

    async def probe_once(self) -> None:
        """Ask the database once: an answer ends an outage, a failure starts one."""
        try:
            await self._probe.check()
        except Exception as exc:  # whatever keeps it from answering: away for us
            starts = not self._log.away
            _say(self._log.failed(self._clock(), describe(exc)))
            if starts:
                self._changed(available=False)
        else:
            ended = self._log.away
            _say(self._log.answered(self._clock()))
            if ended:
                self._changed(available=True)
        _say(self._log.tick(self._clock()))

    async def run(self) -> None:
        """Probe every ``interval`` seconds, or sooner when asked, until cancelled."""
        while True:
            self._asked.clear()
            await self.probe_once()
            await asyncio.sleep(PROBE_GAP)
            await wait_any(self._asked, within=self._interval - PROBE_GAP)

    async def close(self) -> None:
        """Close the probe's connection (after :meth:`run` was cancelled)."""
        await self._probe.close()

    def _changed(self, *, available: bool) -> None:
        if self._on_change is not None:
            self._on_change(available)


def _say(note: Note | None) -> None:
    if note is None:
        return
    if note.level == "info":
        log.info(note.event, **note.fields)
    else:
        log.warning(note.event, **note.fields)


class LibraryNoise(logging.Filter):
    """asyncpg's own reports of a database outage, kept out of the logs:

    - its pool logs a warning with a traceback each time it fails to reopen its floor
      of connections (``min_size``), backing off to a minute: dropped while the watch
      knows the database is away (its summary says as much), otherwise kept as one
      line without the traceback (the error appended);
    - a connection attempt cancelled (a request's bound passed) just as its socket
      opened leaves a future with ``ConnectionError('unexpected connection_lost()
      call')`` that asyncio reports as "never retrieved" (asyncpg's TLS negotiation,
      ``connect_utils.TLSUpgradeProto``): dropped, nothing was lost.

    Install with :meth:`install`, remove with :meth:`remove`."""

    POOL_LOGGER = "asyncpg.pool"
    POOL_FLOOR = "Failed to restore the pool connection floor"
    ASYNCIO_LOGGER = "asyncio"
    NEVER_RETRIEVED = "Future exception was never retrieved"
    CANCELLED_CONNECT = "unexpected connection_lost() call"

    def __init__(self, watch: DatabaseWatch) -> None:
        super().__init__()
        self._watch = watch

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        error = record.exc_info[1] if record.exc_info else None
        if message.startswith(self.NEVER_RETRIEVED):
            return not (isinstance(error, ConnectionError) and str(error) == self.CANCELLED_CONNECT)
        if not message.startswith(self.POOL_FLOOR):
            return True
        if self._watch.away:
            return False
        if error is not None:
            record.msg = f"{record.getMessage()}: {describe(error)}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True

    def install(self) -> None:
        logging.getLogger(self.POOL_LOGGER).addFilter(self)
        logging.getLogger(self.ASYNCIO_LOGGER).addFilter(self)

    def remove(self) -> None:
        logging.getLogger(self.POOL_LOGGER).removeFilter(self)
        logging.getLogger(self.ASYNCIO_LOGGER).removeFilter(self)
