"""SIGTERM and SIGINT over the whole life of a process, from its first instant to exit.

:meth:`StopRequest.install` (the entry point calls it before importing the rest of
intentd) catches both signals at once. Until the process starts to act
(:meth:`StopRequest.watching`, where a daemon connects), a signal ends it at once
with ``SystemExit(0)``: it is only importing, reading its settings and checking its
token contracts, and has nothing to finish. From then on, while its event loop runs,
the loop's own signal handlers serve; after the loop, a signal is remembered.

What a signal means (docs/operations.md, Stopping): the first sets
:attr:`Stopping.stop` (take no more work, finish what is in hand); the second sets
:attr:`Stopping.now` too (cancel what still runs, without waiting for the drain
deadline). Neither ends the process by itself: it stops by returning, exit status 0.
"""

from __future__ import annotations

# Only the standard library's lightest modules at import: the entry point installs the
# handlers before anything else is loaded (asyncio and structlog come in when used).
import contextlib
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio
    from types import FrameType

__all__ = ["PROCESS", "SIGNALS", "StopRequest", "Stopping"]

SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _event() -> asyncio.Event:
    import asyncio

    return asyncio.Event()


def _log(event: str, **values: object) -> None:
    import structlog

    structlog.get_logger().info(event, **values)


@dataclass(frozen=True, slots=True)
class Stopping:
    """A stop request as events of the running loop."""

    stop: asyncio.Event = field(default_factory=_event)
    """Set by the first signal: take no more work, finish what is in hand."""
    now: asyncio.Event = field(default_factory=_event)
    """Set by the second: cancel what still runs."""


class StopRequest:
    """The signals a process received; one per process (``intentd.cli`` holds it)."""

    def __init__(self) -> None:
        self.received = 0
        self._first: signal.Signals | None = None
        self._installed = False
        self._before_start = False
        self._stopping: Stopping | None = None

    @property
    def requested(self) -> bool:
        return self.received > 0

    def install(self) -> None:
        """Catch SIGTERM and SIGINT from now on (main thread; idempotent)."""
        for sig in SIGNALS:
            signal.signal(sig, self._caught)
        self._installed = True
        self._before_start = self._stopping is None and not self.received

    def release(self) -> None:
        """Give both signals their default action back (a one-shot command: a signal
        ends it as usual); one that came meanwhile takes effect now."""
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self._installed = False
        if self._first is not None:
            signal.raise_signal(self._first)

    @contextlib.contextmanager
    def watching(self) -> Iterator[Stopping]:
        """Events of the running loop, already set for the signals received so far;
        the loop's signal handlers serve meanwhile (they wake the loop at once)."""
        import asyncio

        loop = asyncio.get_running_loop()
        self._before_start = False
        stopping = Stopping()
        if self.received:
            _log("stopping: asked during start-up", signals=self.received)
            stopping.stop.set()
        if self.received > 1:
            stopping.now.set()
        self._stopping = stopping
        for sig in SIGNALS:
            loop.add_signal_handler(sig, self._received, sig)
        try:
            yield stopping
        finally:
            self._stopping = None
            for sig in SIGNALS:
                loop.remove_signal_handler(sig)
                if self._installed:
                    signal.signal(sig, self._caught)

    def _caught(self, signum: int, _frame: FrameType | None) -> None:
        """Outside a loop: exit before the start, else remember it (no logging here:
        the interrupted code may hold the log's lock)."""
        self.received += 1
        self._first = self._first or signal.Signals(signum)
        if self._before_start:
            raise SystemExit(0)

    def _received(self, sig: signal.Signals) -> None:
        """In the loop, as one of its callbacks."""
        self.received += 1
        self._first = self._first or sig
        second = self.received > 1
        _log("stopping now: cancelling what still runs" if second else "stopping", signal=sig.name)
        if self._stopping is not None:
            self._stopping.stop.set()
            if second:
                self._stopping.now.set()


PROCESS = StopRequest()
"""The process's stop request (installed by ``intentd.__main__.run`` and ``cli.main``)."""
