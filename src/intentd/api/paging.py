"""What every list of the API shares: its time and order query parameters, and its
opaque cursors (the intent list, the event log, an intent's timeline).

Pure: no I/O. Times are RFC 3339 with a zone (``2026-11-23T10:00:00Z``); anything else
is 400 ``invalid_time``. A cursor is URL-safe base64 of ``<tag>:<n>[:<m>]``, the tag
naming the list that gave it out and the numbers its position (each at most 2^63-1);
a cursor that is malformed, or of another list, is 400 ``invalid_cursor``.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime
from typing import Annotated, Literal

from fastapi import Query

from intentd.api.problems import ApiProblem

__all__ = [
    "CreatedAfter",
    "CreatedBefore",
    "Cursor",
    "Order",
    "decode_cursor",
    "encode_cursor",
    "parse_time",
]

_RFC3339 = {"format": "date-time"}
CreatedAfter = Annotated[
    str | None,
    Query(max_length=64, json_schema_extra=_RFC3339, description="created at or after"),
]
CreatedBefore = Annotated[
    str | None,
    Query(max_length=64, json_schema_extra=_RFC3339, description="created before"),
]
Order = Annotated[
    Literal["desc", "asc"], Query(description="desc: newest first; asc: oldest first")
]
Cursor = Annotated[
    str | None,
    Query(max_length=64, description="next_cursor of an earlier page of the same route"),
]

_TEXT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NUMBER = re.compile(r"^\d{1,19}$")
_INT64 = 2**63 - 1


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


def encode_cursor(tag: str, *position: int) -> str:
    text = ":".join((tag, *(str(number) for number in position)))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(tag: str, cursor: str, count: int) -> tuple[int, ...]:
    """The ``count`` numbers of a cursor ``encode_cursor(tag, ...)`` gave out."""
    if not _TEXT.match(cursor):
        raise _bad_cursor()
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        raise _bad_cursor() from None
    found, *parts = text.split(":")
    if found != tag or len(parts) != count or not all(_NUMBER.match(p) for p in parts):
        raise _bad_cursor()
    numbers = tuple(int(part) for part in parts)
    if max(numbers) > _INT64:
        raise _bad_cursor()
    return numbers


def _bad_cursor() -> ApiProblem:
    return ApiProblem(
        400,
        "invalid_cursor",
        "cursor is not one this endpoint gave out (pass next_cursor back unchanged)",
        field="cursor",
    )
