"""The client libraries' own log lines, kept to a few per outage.

aiokafka logs each failed connection, metadata request and fetch: about a hundred
lines a second while the brokers are away (920 error lines in 22 s of one outage);
asyncpg's pool logs each failed attempt to restore its floor of connections, with a
traceback. :class:`QuietLibraryLogs`, a filter on the process's log handlers, keeps
their warnings and errors to what tells something new:

- while the library's dependency is down (``Health``: Kafka for ``aiokafka``,
  PostgreSQL for ``asyncpg``), none: the outage's own lines stand for them;
- otherwise at most one line of each kind (logger and message template) per ``every``
  seconds; the next one says how many it stood for (``... (12 more like it)``);
- never a traceback: the exception's type and text are put in the line instead;
- a line makes ``Health`` probe the dependency at once (an error line of aiokafka's,
  any warning of asyncpg's), so an outage is seen within a moment of the first one;
- a connection attempt of asyncpg's cancelled (an API request's bound passed) just as
  its socket opened leaves a future with ``ConnectionError('unexpected
  connection_lost() call')`` that asyncio reports as "never retrieved" (asyncpg's TLS
  negotiation, ``connect_utils.TLSUpgradeProto``): dropped, nothing was lost.

Lines below warning pass untouched (the rebalances' info lines are few). One filter per
process, whichever roles it runs (the API's too).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from intentd.supervision import KAFKA, POSTGRESQL, Dependency, Health

__all__ = ["EVERY", "QuietLibraryLogs"]

EVERY = 30.0
"""Seconds during which further lines of a kind are counted, not written."""
_LIBRARIES: tuple[tuple[str, Dependency, int], ...] = (
    ("aiokafka", KAFKA, logging.ERROR),
    ("asyncpg", POSTGRESQL, logging.WARNING),
)
"""Logger name prefix, its dependency, the level from which a line makes it suspect."""
_KINDS = 1000
"""Kinds of line remembered at most."""
_NEVER_RETRIEVED = "Future exception was never retrieved"
_CANCELLED_CONNECT = "unexpected connection_lost() call"


class QuietLibraryLogs(logging.Filter):
    def __init__(
        self, health: Health, *, every: float = EVERY, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._health = health
        self._every = every
        self._clock = clock
        self._written: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        if record.name == "asyncio" and _cancelled_connect(record):
            return False
        library = next((lib for lib in _LIBRARIES if record.name.startswith(lib[0])), None)
        if library is None:
            return True
        _, dependency, suspicious = library
        if record.levelno >= suspicious:
            self._health.suspect(dependency)
        if self._health.is_down(dependency):
            return False
        kind = (record.name, str(record.msg))
        now = self._clock()
        if now - self._written.get(kind, -self._every) < self._every:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        if len(self._written) > _KINDS:  # templates are few; a library formatting its own
            self._written.clear()  # text would make each line a kind: stay bounded
            self._held.clear()
        self._written[kind] = now
        held = self._held.pop(kind, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like it in the last {self._every:g} s)"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text = f"{type(error).__name__}: {error}"
            record.msg = f"{record.msg}: {text.replace('%', '%%') if record.args else text}"
            record.exc_info = None
            record.exc_text = None
        return True

    def install(self) -> None:
        """Filter every handler of the root logger (the libraries' lines propagate there)."""
        for handler in logging.getLogger().handlers:
            handler.addFilter(self)

    def remove(self) -> None:
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self)


def _cancelled_connect(record: logging.LogRecord) -> bool:
    """asyncio's report of a connection attempt cancelled as its socket opened."""
    error = record.exc_info[1] if record.exc_info else None
    return (
        str(record.msg).startswith(_NEVER_RETRIEVED)
        and isinstance(error, ConnectionError)
        and str(error) == _CANCELLED_CONNECT
    )
