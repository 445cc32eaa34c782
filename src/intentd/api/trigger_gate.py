"""Who may start a trigger-processing call now: a per-intent cooldown and a per-client cap.

Each call reads the chain, so repeated calls are an amplifier. :class:`TriggerGate`
admits a call for intent ``i`` of client ``c`` only if

- no call for ``i`` started in the last ``cooldown`` seconds (counted from the start of
  the previous call, whether it succeeded or not), else
  ``TriggerRefused("trigger_cooldown")`` with the seconds left;
- fewer than ``per_client`` calls of ``c`` are running, else
  ``TriggerRefused("too_many_triggers")``.

The cooldown also refuses a second call for an intent while its first runs. The state
is per process (each API worker and replica has its own): a client may get up to
``workers * replicas`` times these allowances, never more. Memory is bounded by the
intents triggered in the last ``cooldown`` seconds and the clients with a call running.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from uuid import UUID

__all__ = ["TriggerGate", "TriggerRefused"]


class TriggerRefused(Exception):
    """Not now: try again in ``retry_after`` seconds (answered 429 with ``Retry-After``)."""

    def __init__(self, code: str, detail: str, retry_after: int) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.retry_after = retry_after


class TriggerGate:
    def __init__(
        self,
        *,
        cooldown: float,
        per_client: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cooldown = cooldown
        self._per_client = per_client
        self._clock = clock
        self._started: OrderedDict[int, float] = OrderedDict()
        """Intent id -> when its last call started, oldest first."""
        self._running: dict[UUID, int] = {}

    @contextmanager
    def admit(self, intent_id: int, client_id: UUID) -> Iterator[None]:
        """Hold a place for one call while the ``with`` body runs; raise
        :class:`TriggerRefused` instead if the call may not start now."""
        now = self._clock()
        self._forget_before(now - self._cooldown)
        started = self._started.get(intent_id)
        if started is not None:
            left = math.ceil(started + self._cooldown - now)
            raise TriggerRefused(
                "trigger_cooldown",
                f"this intent was triggered less than {self._cooldown:g} s ago",
                max(left, 1),
            )
        running = self._running.get(client_id, 0)
        if running >= self._per_client:
            raise TriggerRefused(
                "too_many_triggers",
                f"{running} trigger-processing calls of this client are running",
                1,
            )
        self._started[intent_id] = now
        self._running[client_id] = running + 1
        try:
            yield
        finally:
            left_running = self._running[client_id] - 1
            if left_running:
                self._running[client_id] = left_running
            else:
                del self._running[client_id]

    def _forget_before(self, moment: float) -> None:
        while self._started:
            intent_id, started = next(iter(self._started.items()))
            if started > moment:
                return
            del self._started[intent_id]
