"""Exponential backoff: one definition of "wait longer after each failure, up to a cap".

The delay after failed attempt ``n`` (counted from 1) is
``min(cap, initial * factor ** (n - 1) + uniform(0, jitter))``: never negative, never
above ``cap``, and without jitter never shorter than the delay before it.
:meth:`Backoff.after` gives the same sequence to a loop that keeps only the last
delay (0 meaning "no failure yet").
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Backoff"]

_MAX_EXPONENT = 64  # factor ** 64 is past any cap; keeps the power finite


@dataclass(frozen=True, slots=True)
class Backoff:
    initial: float
    """Delay after the first failure (seconds)."""
    factor: float = 2.0
    cap: float = math.inf
    """No delay is longer."""
    jitter: float = 0.0
    """At most this many seconds are added at random (before the cap)."""

    def __post_init__(self) -> None:
        if self.initial < 0 or self.factor < 1 or self.cap < 0 or self.jitter < 0:
            raise ValueError(f"invalid backoff {self}")

    def delay(
        self, attempt: int, *, uniform: Callable[[float, float], float] | None = None
    ) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based)."""
        if attempt < 1:
            raise ValueError(f"attempt counts from 1, not {attempt}")
        base = self.initial * self.factor ** min(attempt - 1, _MAX_EXPONENT)
        if self.jitter:
            base += (uniform or random.uniform)(0.0, self.jitter)
        return float(min(self.cap, base))

    def delays(self) -> Iterator[float]:
        """The delays after failed attempts 1, 2, 3, ... (endless)."""
        attempt = 1
        while True:
            yield self.delay(attempt)
            attempt += 1

    def after(self, previous: float) -> float:
        """The delay that follows ``previous`` (0: none yet), without jitter."""
        return float(min(self.cap, max(previous * self.factor, self.initial)))
