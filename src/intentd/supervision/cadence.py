"""How closely a dependency is watched: its probe and the cadence it is asked at.

A :data:`Probe` asks the dependency something cheap and raises unless it answered
(``adapters.probes``). A :class:`Cadence` bounds it: how often while the dependency
answers, how long one may take (a stalled server counts as down), how soon again
while it is down. One probe per dependency and process serves every role of the
process; each role asks for the cadence it needs and the closest is kept
(:meth:`Cadence.closest`): the daemons' (:data:`PROBE_EVERY`, :data:`PROBE_TIMEOUT`,
:data:`RETRY`) by default, the API's PostgreSQL every second (``api.connections``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from intentd.backoff import Backoff

__all__ = ["MIN_GAP", "PROBE_EVERY", "PROBE_TIMEOUT", "RETRY", "Cadence", "Probe"]

Probe = Callable[[], Awaitable[object]]
"""Asks the dependency something cheap; raises unless it answered."""

PROBE_EVERY = 5.0
"""Seconds between two probes of a dependency that answers."""
PROBE_TIMEOUT = 3.0
"""Seconds a probe may take before the dependency counts as down."""
RETRY = Backoff(0.5, cap=5.0, jitter=0.5)
"""Delays between the probes of a dependency that is down: 0.5 s doubling to 5 s, plus
up to 0.5 s at random (so replicas do not probe in step)."""
MIN_GAP = 0.5
"""Seconds at least between two probes of one dependency (however many suspicions)."""


@dataclass(frozen=True, slots=True)
class Cadence:
    """How closely a dependency is probed (the daemons' by default)."""

    every: float = PROBE_EVERY
    """Seconds between two probes while it answers."""
    timeout: float = PROBE_TIMEOUT
    """Seconds a probe may take before it counts as down."""
    retry: Backoff = RETRY
    """Delays between the probes while it is down."""
    min_gap: float = MIN_GAP
    """Seconds at least between two probes."""

    def closest(self, other: Cadence) -> Cadence:
        """Each bound the tighter of the two (one probe serving two roles' needs)."""
        a, b = self.retry, other.retry
        return Cadence(
            every=min(self.every, other.every),
            timeout=min(self.timeout, other.timeout),
            retry=Backoff(
                min(a.initial, b.initial),
                min(a.factor, b.factor),
                cap=min(a.cap, b.cap),
                jitter=min(a.jitter, b.jitter),
            ),
            min_gap=min(self.min_gap, other.min_gap),
        )
