"""The poller's account of chain reads that failed in a row: how long to wait, what to log.

A read that fails (no usable answer after the RPC client's retries, answers that do not
fit together, logs not proven whole, a walk-back node without our blocks) is never a
reason to skip a block or to exit: the poller waits and reads the same blocks again,
for as long as it takes. The logs of an outage are a few lines: the first failure
(warning), a summary every ``summary_every`` seconds while it lasts (error: an
operator should look), and the recovery (info); each failure is counted in
``intentd_poller_read_failures_total{chain,reason}``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import structlog

from intentd import observability as metrics
from intentd.backoff import Backoff

__all__ = ["ReadFailures"]

log = structlog.get_logger()


class ReadFailures:
    """Failed reads of one chain since the last one that succeeded."""

    def __init__(
        self,
        chain: str,
        *,
        base: float,
        cap: float = 5.0,
        summary_every: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._chain = chain
        self._backoff = Backoff(base, cap=cap)
        self._summary_every = summary_every
        self._clock = clock
        self._reasons: Counter[str] = Counter()
        self._since = 0.0
        self._summarised = 0.0

    @property
    def count(self) -> int:
        """Reads failed in a row."""
        return sum(self._reasons.values())

    def failed(self, reason: str, error: str, blocks: str) -> float:
        """Count a failure; the seconds to wait before reading again."""
        now = self._clock()
        metrics.POLLER_READ_FAILURES.labels(self._chain, reason).inc()
        self._reasons[reason] += 1
        if self.count == 1:
            self._since = self._summarised = now
            log.warning(
                "chain read failed; reading the same blocks again",
                reason=reason,
                blocks=blocks,
                error=error,
            )
        elif now - self._summarised >= self._summary_every:
            self._summarised = now
            log.error(
                "chain reads still failing; the poller waits at these blocks",
                reasons=dict(self._reasons),
                seconds=round(now - self._since, 1),
                blocks=blocks,
                error=error,
            )
        return self._backoff.delay(self.count)

    def succeeded(self) -> None:
        """A read fitted together again."""
        if self._reasons:
            log.info(
                "chain reads recovered",
                reasons=dict(self._reasons),
                seconds=round(self._clock() - self._since, 1),
            )
            self._reasons.clear()
