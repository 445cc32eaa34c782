"""The event log's query parameters, read into values or refused with a precise problem.

Pure: no I/O. ``type`` takes event types given once per value, comma-separated, or
both (``type=intent_funded&type=intent_completed`` or
``type=intent_funded,intent_completed``); an unknown one is 422 ``unknown_event_type``.
Times and cursors are those of every list (:mod:`intentd.api.paging`): a list
cursor holds a position in the log (``adapters.postgres.event_log.LogPosition``), a timeline
cursor an event's ``sequence``; one of the other kind is 400 ``invalid_cursor``.
"""

from __future__ import annotations

from collections.abc import Iterable

from intentd.adapters.postgres.event_log import LogPosition
from intentd.api.paging import decode_cursor, encode_cursor
from intentd.api.problems import ApiProblem
from intentd.contract.events import EventType

__all__ = [
    "decode_log_cursor",
    "decode_sequence_cursor",
    "encode_log_cursor",
    "encode_sequence_cursor",
    "parse_types",
]

MAX_TYPES = 16
"""Values of ``type`` a request may give (there are only a handful of types)."""


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


def encode_log_cursor(at: LogPosition) -> str:
    return encode_cursor("l", at.tx_id, at.position)


def decode_log_cursor(cursor: str | None) -> LogPosition | None:
    if cursor is None:
        return None
    tx_id, position = decode_cursor("l", cursor, 2)
    return LogPosition(tx_id, position)


def encode_sequence_cursor(sequence: int) -> str:
    return encode_cursor("s", sequence)


def decode_sequence_cursor(cursor: str | None) -> int:
    """The sequence after which the timeline continues (0 without a cursor)."""
    if cursor is None:
        return 0
    (sequence,) = decode_cursor("s", cursor, 1)
    return sequence
