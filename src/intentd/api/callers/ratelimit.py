"""Request rate limits: one token bucket per API key, per replica (pure arithmetic).

A key allowed ``limit`` requests per second gets, on each of ``replicas`` API
replicas, a bucket refilled at ``limit / replicas`` tokens per second that holds at
most one second's worth (at least one token). A request takes one token; with none
left it is refused and told how long until the next token (``Retry-After``).
Behind a load balancer that spreads a key's requests evenly, the replicas together
admit about ``limit`` per second with no shared state (see docs/api.md).

A limiter holds at most ``size`` buckets (keys, sessions or sources: an IPv4 address
or an IPv6 /64, ``sources.source_bucket``): past that the least recently used bucket
is forgotten, and comes back full.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

from intentd.api.callers.lru import Lru

__all__ = ["RateLimiter", "TokenBucket", "retry_after_seconds"]


class TokenBucket:
    """``rate`` tokens per second, at most ``capacity`` held; starts full."""

    __slots__ = ("capacity", "rate", "tokens", "updated")

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        if rate <= 0 or capacity < 1:
            raise ValueError("rate must be positive and capacity at least 1")
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.updated = now

    def take(self, now: float) -> float:
        """Take one token: 0.0 when granted, else the seconds until one is available."""
        if now > self.updated:
            self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
            self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


def retry_after_seconds(wait: float) -> int:
    """The ``Retry-After`` value (whole seconds, at least 1) for a wait of ``wait`` seconds."""
    return max(1, math.ceil(wait))


class RateLimiter:
    """Buckets by key; a key's limit may change (the bucket is rebuilt when it does)."""

    def __init__(self, replicas: int = 1, *, size: int = 100_000) -> None:
        if replicas < 1:
            raise ValueError("replicas must be at least 1")
        self._replicas = replicas
        self._buckets: Lru[Hashable, tuple[int, TokenBucket]] = Lru(size)

    def check(self, key: Hashable, limit: int, now: float) -> float:
        """0.0 if a request of ``key`` (``limit`` per second overall) may go ahead now,
        else the seconds to wait."""
        entry = self._buckets.get(key)
        if entry is None or entry[0] != limit:
            rate = limit / self._replicas
            entry = (limit, TokenBucket(rate, max(1.0, rate), now))
            self._buckets.put(key, entry)
        return entry[1].take(now)
