"""Conditions seen at every attempt, each told in a few lines however long it lasts (pure).

A loop that retries meets the same condition at each attempt: a nonce group waiting
for proof of who used its nonce, an RPC URL that answers another chain, a node behind
the relayer's payments. Logging each sighting writes a line per tick. :class:`Episodes`
tells each condition (by key) as the outage log tells an outage
(:mod:`~intentd.supervision.outage_log`), in at most ``2 + duration / summary_every``
lines:

- its first sighting: one line (:attr:`Wording.begun`, at :attr:`Wording.level`, the
  caller's fields);
- while it is seen again, every ``summary_every`` seconds: :attr:`Wording.lasting`,
  with ``seconds`` (since it began), ``times`` (sightings so far) and the last
  sighting's fields (None: no summary, the first line stands for it);
- its end, when the caller says so: :attr:`Wording.ended` (info), with the last
  sighting's fields, the end's own, ``seconds`` and ``times``.

The caller logs the lines (:func:`~intentd.supervision.outage_log.emit`) and keeps
counting each sighting in its metrics. Times are seconds of a monotonic clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from intentd.supervision.outage_log import SUMMARY_EVERY, Line

__all__ = ["Episodes", "Wording"]

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Wording:
    begun: str
    """The event of the first line."""
    ended: str
    """The event of the last line."""
    lasting: str = ""
    """The event of a summary (none without ``summary_every``)."""
    level: str = "warning"
    """The level of the first line and the summaries (``warning`` or ``error``)."""


@dataclass(slots=True)
class _Episode:
    since: float
    said_at: float
    fields: dict[str, object]
    """The last sighting's."""
    times: int = 1


class Episodes(Generic[K]):
    """The episodes of one kind of condition, one per key at a time."""

    def __init__(
        self,
        wording: Wording,
        *,
        summary_every: float | None = SUMMARY_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wording = wording
        self._every = summary_every
        self._clock = clock
        self._on: dict[K, _Episode] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._on

    def __len__(self) -> int:
        return len(self._on)

    def seen(self, key: K, /, **fields: object) -> Line | None:
        """The condition ``key`` is seen now: the first line if it begins, a summary if
        one is due, else None (counted)."""
        now = self._clock()
        episode = self._on.get(key)
        if episode is None:
            self._on[key] = _Episode(now, now, fields)
            return Line(self._wording.level, self._wording.begun, fields)
        episode.times += 1
        episode.fields = fields
        if self._every is None or now - episode.said_at < self._every:
            return None
        episode.said_at = now
        figures = {"seconds": round(now - episode.since, 1), "times": episode.times}
        return Line(self._wording.level, self._wording.lasting, fields | figures)

    def ended(self, key: K, /, **fields: object) -> Line | None:
        """The condition ``key`` is over: its last line, or None if it was not on."""
        episode = self._on.pop(key, None)
        if episode is None:
            return None
        figures = {"seconds": round(self._clock() - episode.since, 1), "times": episode.times}
        return Line("info", self._wording.ended, episode.fields | fields | figures)

    def keep(self, keys: Iterable[K], /, **fields: object) -> list[Line]:
        """End every episode whose key is not in ``keys`` (its subject is gone: decided
        elsewhere, no longer asked about); their last lines."""
        kept = set(keys)
        gone = [key for key in self._on if key not in kept]
        return [line for key in gone if (line := self.ended(key, **fields)) is not None]
