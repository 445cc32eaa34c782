"""A client's budget of webhook send calls: test, redeliver, recover (pure).

Each call makes deliveries due at once (a recover, every failed one of a window), so
each is an amplifier: a client gets ``per_minute`` calls a minute, in a token bucket
that refills continuously and holds at most one minute's worth (a burst of
``per_minute`` calls after a quiet minute). The adapter keeps the bucket in
PostgreSQL (one row per client, locked while taken), so the budget holds over every
API process and replica, and times are the database's own clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

__all__ = ["Budget", "retry_after", "take"]


@dataclass(frozen=True, slots=True)
class Budget:
    tokens: float
    """Calls left now (a fraction is a call on its way)."""
    at: datetime


def take(budget: Budget | None, now: datetime, per_minute: int) -> tuple[Budget, float]:
    """Take one call from ``budget`` (None: a client's first, a full bucket) at ``now``:
    the budget after it, and 0.0 if the call may go ahead, else the seconds until it
    may (nothing taken)."""
    if per_minute < 1:
        raise ValueError("per_minute must be at least 1")
    capacity = float(per_minute)
    rate = per_minute / 60.0
    if budget is None:
        tokens = capacity
    else:
        elapsed = max((now - budget.at).total_seconds(), 0.0)
        tokens = min(capacity, max(budget.tokens, 0.0) + elapsed * rate)
    at = max(now, budget.at) if budget is not None else now
    if tokens >= 1.0:
        return Budget(tokens - 1.0, at), 0.0
    return Budget(tokens, at), (1.0 - tokens) / rate


def retry_after(wait: float) -> int:
    """``Retry-After`` for a wait of ``wait`` seconds: whole seconds, at least 1."""
    return max(1, math.ceil(wait))
