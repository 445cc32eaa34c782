"""The event log's query parameters, read into values or refused with a precise problem.

Pure: no I/O. ``type`` takes event types given once per value, comma-separated, or
both (``type=intent_funded&type=intent_completed`` or
``type=intent_funded,intent_completed``); an unknown one is 422 ``unknown_event_type``.
Times are RFC 3339 with a zone (``2026-11-23T10:00:00Z``); anything else is 400
``invalid_time``. Cursors are opaque to clients: a list cursor holds a position in
the log (``adapters.event_log.LogPosition``), a timeline cursor an event's
``sequence``; one that is malformed, or of the other kind, is 400 ``invalid_cursor``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from datetime import datetime

from intentd.adapters.event_log import LogPosition
from intentd.api.problems import ApiProblem
from intentd.domain.events import EventType

__all__ = [
    "decode_log_cursor",
    "decode_sequence_cursor",
    "encode_log_cursor",
    "encode_sequence_cursor",
    "parse_time",
    "parse_types",
]

MAX_TYPES = 16
"""Values of ``type`` a request may give (there are only a handful of types)."""
_LOG = re.compile(r"^l:(\d{1,19}):(\d{1,19})$")
_SEQUENCE = re.compile(r"^s:(\d{1,19})$")
_INT64 = 2**63 - 1
_TEXT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def parse_types(values: Iterable[str]) -> tuple[str, ...]:
    """The event types named by ``type`` (each value a type or a comma list), in order,
    without repeats."""
    found: list[str] = []
    for value in values:
        for part in value.split(","):
            name = part.strip()
            if name not in EventType.__members__.values():
                known = ", ".join(t.value for t in EventType)
                raise ApiProblem(
                    422,
                    "unknown_event_type",
                    f"{name!r} is not an event type; the types are {known}",
                    field="type",
                )
            if name not in found:
                found.append(name)
    if len(found) > MAX_TYPES:  # pragma: no cover - there are fewer types than that
        raise ApiProblem(400, "validation_error", "too many event types", field="type")
    return tuple(found)


def parse_time(value: str | None, field: str) -> datetime | None:
    """``value`` as an aware datetime, None if absent; 400 ``invalid_time`` otherwise."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise ApiProblem(
            400,
            "invalid_time",
            f"{field} must be an RFC 3339 date and time with a zone,"
            f" like 2026-11-23T10:00:00Z; got {value!r}",
            field=field,
        )
    return parsed


def encode_log_cursor(at: LogPosition) -> str:
    return _encode(f"l:{at.tx_id}:{at.position}")


def decode_log_cursor(cursor: str | None) -> LogPosition | None:
    if cursor is None:
        return None
    match = _LOG.match(_decode(cursor))
    if match is None or max(int(match.group(1)), int(match.group(2))) > _INT64:
        raise _bad_cursor()
    return LogPosition(int(match.group(1)), int(match.group(2)))


def encode_sequence_cursor(sequence: int) -> str:
    return _encode(f"s:{sequence}")


def decode_sequence_cursor(cursor: str | None) -> int:
    """The sequence after which the timeline continues (0 without a cursor)."""
    if cursor is None:
        return 0
    match = _SEQUENCE.match(_decode(cursor))
    if match is None or int(match.group(1)) > _INT64:
        raise _bad_cursor()
    return int(match.group(1))


def _encode(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode(cursor: str) -> str:
    if not _TEXT.match(cursor):
        raise _bad_cursor()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return raw.decode("ascii")
    except (binascii.Error, ValueError):
        raise _bad_cursor() from None


def _bad_cursor() -> ApiProblem:
    return ApiProblem(
        400,
        "invalid_cursor",
        "cursor is not one this endpoint gave out (pass next_cursor back unchanged)",
        field="cursor",
    )
