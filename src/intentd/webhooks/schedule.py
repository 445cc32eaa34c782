"""When to try a delivery again, and when to give up on it or on its endpoint (pure).

The schedule (delay before retry *n*, after the *n*-th failed attempt of a round)::

    retry  1      5 s        retry  7      2 h
    retry  2     30 s        retry  8      4 h
    retry  3      2 min      retry  9      8 h
    retry  4     10 min      retry 10     16 h
    retry  5     30 min      retry 11     24 h
    retry  6      1 h        retry 12     24 h

Each delay is stretched by a random jitter of 0 to +25 % (never shortened), so
endpoints that failed together do not all come back at once. Thirteen attempts in
all (the first, then twelve retries) spread over 3 days 7 h at least
(:data:`MIN_SPAN`) and 4 days 3 h at most; after the thirteenth failure the
delivery is ``failed`` (a merchant can redeliver or recover it).

- A ``2xx`` answer delivers. Any other answer (redirects are not followed), a
  timeout or a connection error is a failed attempt.
- ``429`` and ``503`` with ``Retry-After`` (seconds or an HTTP date): the next attempt
  is not before it (capped at :data:`MAX_RETRY_AFTER`) nor before the schedule. Any
  other value of the header (hostile, unreadable) is ignored: the schedule applies.
- ``410 Gone`` disables the endpoint at once (reason ``gone``).
- An endpoint whose attempts have failed continuously for :data:`DISABLE_AFTER`
  (5 days: no success since its first failure) is disabled at its next failed
  attempt (reason ``failing``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from enum import StrEnum

__all__ = [
    "DELAYS",
    "DISABLE_AFTER",
    "JITTER",
    "MAX_ATTEMPTS",
    "MAX_RETRY_AFTER",
    "MIN_SPAN",
    "Decision",
    "DisableReason",
    "decide",
    "parse_retry_after",
    "retry_delay",
]

DELAYS: tuple[timedelta, ...] = (
    timedelta(seconds=5),
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=10),
    timedelta(minutes=30),
    timedelta(hours=1),
    timedelta(hours=2),
    timedelta(hours=4),
    timedelta(hours=8),
    timedelta(hours=16),
    timedelta(hours=24),
    timedelta(hours=24),
)
JITTER = 0.25
"""Each delay is multiplied by a factor drawn uniformly from ``[1, 1 + JITTER]``."""
MAX_ATTEMPTS = len(DELAYS) + 1
MIN_SPAN = sum(DELAYS, timedelta())
"""From the first attempt to the last, at least (no jitter): 3 days 7 h 42 min 35 s."""
MAX_RETRY_AFTER = timedelta(hours=24)
"""The longest wait a ``Retry-After`` can ask for; a longer one is cut to it."""
_DELTA_SECONDS = re.compile(r"[0-9]+", re.ASCII)
_MAX_DIGITS = len(str(int(MAX_RETRY_AFTER.total_seconds())))
DISABLE_AFTER = timedelta(days=5)


class DisableReason(StrEnum):
    GONE = "gone"
    """The endpoint answered 410 Gone."""
    FAILING = "failing"
    """Every attempt failed for :data:`DISABLE_AFTER`."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What follows one attempt."""

    delivered: bool
    next_attempt_at: datetime | None
    """None when the delivery is over (delivered, failed for good, or endpoint disabled)."""
    disable: DisableReason | None = None

    @property
    def failed(self) -> bool:
        """The delivery failed for good (no further attempt)."""
        return not self.delivered and self.next_attempt_at is None


def retry_delay(failed_attempts: int, draw: float) -> timedelta | None:
    """The wait after the ``failed_attempts``-th failure of a round (``draw`` in [0, 1]);
    None once every retry was used."""
    if failed_attempts < 1 or failed_attempts > len(DELAYS):
        return None
    return DELAYS[failed_attempts - 1] * (1 + JITTER * min(max(draw, 0.0), 1.0))


def parse_retry_after(value: str | None, now: datetime) -> timedelta | None:
    """``Retry-After`` as a wait from ``now``, between zero and :data:`MAX_RETRY_AFTER`;
    None when absent or unreadable. Never raises, whatever the endpoint sent.

    Read as RFC 9110 says: delta-seconds (ASCII digits only: ``"²"`` or ``"٣"`` are not
    delta-seconds) or an HTTP date; a number too long to convert is as long as the cap;
    a date that cannot be a date (year 99999, offset +9999), a sign, a fraction or
    anything else is unreadable.
    """
    if value is None:
        return None
    text = value.strip(" \t")
    if _DELTA_SECONDS.fullmatch(text):
        digits = text.lstrip("0") or "0"
        if len(digits) > _MAX_DIGITS:
            return MAX_RETRY_AFTER
        return min(timedelta(seconds=int(digits)), MAX_RETRY_AFTER)
    try:
        when = parsedate_to_datetime(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        wait = when - now
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return min(max(wait, timedelta()), MAX_RETRY_AFTER)


def decide(
    *,
    status: int | None,
    failed_attempts: int,
    now: datetime,
    failing_since: datetime | None,
    retry_after: str | None = None,
    draw: float | None = None,
) -> Decision:
    """The outcome of an attempt answered with ``status`` (None: no answer).

    ``failed_attempts`` counts the failures of this round including this one if it
    failed; ``failing_since`` is when the endpoint's current run of failures began
    (None if its last attempt succeeded); ``draw`` is the jitter in [0, 1] (random
    if None).
    """
    if status is not None and 200 <= status < 300:
        return Decision(delivered=True, next_attempt_at=None)
    if status == 410:
        return Decision(delivered=False, next_attempt_at=None, disable=DisableReason.GONE)
    if failing_since is not None and now - failing_since >= DISABLE_AFTER:
        return Decision(delivered=False, next_attempt_at=None, disable=DisableReason.FAILING)
    delay = retry_delay(failed_attempts, random.random() if draw is None else draw)  # noqa: S311
    if delay is None:
        return Decision(delivered=False, next_attempt_at=None)
    if status in (429, 503):
        asked = parse_retry_after(retry_after, now)
        if asked is not None:
            delay = max(delay, asked)
    return Decision(delivered=False, next_attempt_at=now + delay)
