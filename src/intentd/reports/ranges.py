"""The date range of a report, read from the request or refused with a precise problem.

Pure: no I/O. A range is ``[start, end)`` in UTC: ``from`` (inclusive) and ``to``
(exclusive) are RFC 3339 date-times with a zone (``2026-11-01T00:00:00Z``). Refused, each
with its code and the field at fault:

- ``invalid_time``: not such a date-time, or no zone (``from``/``to``);
- ``range_reversed``: ``to`` is not after ``from`` (``to``);
- ``range_too_long``: longer than :data:`MAX_RANGE` (``to``): a report holds one
  database snapshot for as long as it streams; ask one year at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["MAX_RANGE", "RangeError", "ReportRange", "iso_utc", "parse_range"]

MAX_RANGE = timedelta(days=366)
"""The longest range a report covers (a leap year)."""


class RangeError(ValueError):
    """A range that cannot be reported on; ``code`` and ``field`` are the problem's."""

    def __init__(self, code: str, detail: str, field: str) -> None:
        super().__init__(detail)
        self.code = code
        self.field = field


@dataclass(frozen=True, slots=True)
class ReportRange:
    """``[start, end)``, both aware and in UTC."""

    start: datetime
    end: datetime

    def label(self) -> str:
        """``20261101T000000Z_20261201T000000Z``: for file names."""
        return f"{_compact(self.start)}_{_compact(self.end)}"


def parse_range(start: str, end: str) -> ReportRange:
    """The range ``[start, end)`` of two RFC 3339 date-times; :class:`RangeError` otherwise."""
    first, last = _time(start, "from"), _time(end, "to")
    if last <= first:
        raise RangeError(
            "range_reversed",
            f"to ({iso_utc(last)}) must be after from ({iso_utc(first)}); the range is [from, to)",
            "to",
        )
    if last - first > MAX_RANGE:
        raise RangeError(
            "range_too_long",
            f"the range from {iso_utc(first)} to {iso_utc(last)} is longer than"
            f" {MAX_RANGE.days} days; ask for one year at a time",
            "to",
        )
    return ReportRange(first, last)


def _time(value: str, field: str) -> datetime:
    try:
        parsed: datetime | None = datetime.fromisoformat(value)
        if parsed is not None and parsed.tzinfo is not None:
            parsed = parsed.astimezone(UTC)
        else:
            parsed = None
    except (ValueError, OverflowError):
        parsed = None
    if parsed is None:
        raise RangeError(
            "invalid_time",
            f"{field} must be an RFC 3339 date and time with a zone, like"
            f" 2026-11-01T00:00:00Z; got {value!r}",
            field,
        )
    return parsed


def iso_utc(moment: datetime) -> str:
    """``2026-11-01T10:00:00.123456Z``: ISO 8601 of a UTC time, with ``Z``."""
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _compact(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ")
