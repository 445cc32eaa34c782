"""The set of watched intent addresses, and which intent rows a refresh must read.

Every chain's poller watches every intent address, whatever the intent's source
chain (a payment on the wrong chain is still found, and later refunded).

Memory: an address is kept as its 20 raw bytes in a ``set`` (about 90 bytes per
address with the set's table), so a million addresses take about 100 MB.

Refreshing by ``id > last seen id`` alone could miss an intent: ids are drawn from a
sequence when a row is inserted, but rows become visible when their transaction
commits, and a later id can commit first. :class:`IntentIdTracker` therefore
remembers the ids skipped below the highest one seen ("gaps": either rolled back or
still in flight) and asks for them again on each refresh until they are
``gap_ttl`` seconds old. An intent insert that takes longer than that to commit
would be missed; the API commits an intent in one short transaction.

Retention: an intent's address is watched while the intent is live and for a
retention window after it became terminal (``intents.terminal_at``). The window is
measured in the poller's *chain time* (the timestamp of the last block it processed,
never later than the wall clock): a payment in a block stamped within the window is
matched even if the poller reads that block days later. :func:`watch_cutoff` is the
end time at or before which an intent is no longer watched; it lags the chain time by
``retention + REORG_MARGIN``, so a block a reorg makes the poller read again is
matched with the addresses it was first matched with. Terminal statuses are final, so
an intent with an end time is never live again: the set never drops a live intent.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

__all__ = [
    "REORG_MARGIN",
    "SWEEP_OVERLAP",
    "SWEEP_STEP",
    "IntentIdTracker",
    "is_watched",
    "sweep_span",
    "watch_cutoff",
]

REORG_MARGIN = timedelta(hours=1)
"""Chain time a rewind can take back: 256 remembered blocks (deeper stops the poller)
of at most 14 s each."""
SWEEP_STEP = timedelta(minutes=1)
"""The cutoff moves (and the leaving intents are read) once it has advanced this much."""
SWEEP_OVERLAP = timedelta(minutes=10)
"""Each sweep reads again this much before the previous cutoff: ``terminal_at`` is the
time its transaction *started*, so a row can commit a little after a sweep passed it."""


def watch_cutoff(chain_time: datetime, wall_time: datetime, retention: timedelta) -> datetime:
    """Intents that became terminal at or before this instant are no longer watched."""
    return min(chain_time, wall_time) - retention - REORG_MARGIN


def is_watched(terminal_at: datetime | None, cutoff: datetime | None) -> bool:
    """Whether an intent that became terminal at ``terminal_at`` (None: live) is watched
    under ``cutoff`` (None: every intent is)."""
    return terminal_at is None or cutoff is None or terminal_at > cutoff


def sweep_span(
    previous: datetime | None, cutoff: datetime
) -> tuple[datetime | None, datetime] | None:
    """The ``(after, until]`` span of terminal times whose intents a move of the cutoff
    from ``previous`` to ``cutoff`` drops (``after`` None: from the beginning), or None
    while the move is not worth a query (or would go back: the cutoff never does)."""
    if previous is None:
        return None, cutoff
    if cutoff - previous < SWEEP_STEP:
        return None
    return previous - SWEEP_OVERLAP, cutoff


class IntentIdTracker:
    """Which intent ids the next refresh must ask for: all above ``last_id``, plus gaps.

    Call :meth:`saw` with the ids each query returned, and :meth:`gaps` for the
    skipped ids still worth asking for. At most ``max_gaps`` gaps are kept (the
    highest ids: an id far below the newest is not in flight any more).
    """

    def __init__(self, *, gap_ttl: float = 600.0, max_gaps: int = 1000) -> None:
        if gap_ttl <= 0 or max_gaps < 0:
            raise ValueError("gap_ttl must be positive and max_gaps not negative")
        self.last_id = 0
        self.max_gaps = max_gaps
        self._gap_ttl = gap_ttl
        self._gaps: dict[int, float] = {}  # id -> when it was first found missing

    def skip_to(self, last_id: int) -> None:
        """Start asking above ``last_id`` (the ids at or below it are known otherwise)."""
        self.last_id = max(self.last_id, last_id)

    def saw(self, ids: Iterable[int], now: float) -> None:
        """Record the ids a query returned, at monotonic time ``now``."""
        for found in sorted(ids):
            if found > self.last_id:
                skipped_from = max(self.last_id + 1, found - self.max_gaps)
                for missing in range(skipped_from, found):
                    self._gaps[missing] = now
                self.last_id = found
            else:
                self._gaps.pop(found, None)
        if len(self._gaps) > self.max_gaps:
            for old in sorted(self._gaps)[: len(self._gaps) - self.max_gaps]:
                del self._gaps[old]

    def gaps(self, now: float) -> list[int]:
        """Skipped ids younger than ``gap_ttl`` at ``now``, in order; older ones are dropped."""
        expired = [gap for gap, since in self._gaps.items() if now - since >= self._gap_ttl]
        for gap in expired:
            del self._gaps[gap]
        return sorted(self._gaps)
