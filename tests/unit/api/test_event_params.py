"""The event log's query parameters: types, times and cursors, refused precisely."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from intentd.adapters.postgres.event_log import LogPosition
from intentd.api.events.params import (
    decode_log_cursor,
    decode_sequence_cursor,
    encode_log_cursor,
    encode_sequence_cursor,
    parse_types,
)
from intentd.api.paging import parse_time
from intentd.api.problems import ApiProblem


def refused(call: object, *args: object) -> tuple[int, str, str | None]:
    with pytest.raises(ApiProblem) as caught:
        call(*args)  # type: ignore[operator]
    return caught.value.status, caught.value.code, caught.value.field


def test_types_repeated_or_comma_separated_in_order_without_repeats() -> None:
    assert parse_types([]) == ()
    assert parse_types(["intent_funded", "intent_expired"]) == ("intent_funded", "intent_expired")
    assert parse_types(["intent_funded, intent_expired", "intent_funded"]) == (
        "intent_funded",
        "intent_expired",
    )


@pytest.mark.parametrize("value", ["intent_paid", "", "intent_funded,", "INTENT_FUNDED"])
def test_an_unknown_type_is_named(value: str) -> None:
    assert refused(parse_types, [value]) == (422, "unknown_event_type", "type")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-23T10:00:00Z", datetime(2026, 11, 23, 10, tzinfo=UTC)),
        ("2026-11-23T10:00:00.5+00:00", datetime(2026, 11, 23, 10, 0, 0, 500_000, tzinfo=UTC)),
        (
            "2026-11-23T12:00:00+02:00",
            datetime(2026, 11, 23, 12, tzinfo=timezone(timedelta(hours=2))),
        ),
    ],
)
def test_times_with_a_zone(text: str, expected: datetime) -> None:
    assert parse_time(text, "created_after") == expected
    assert parse_time(None, "created_after") is None


@pytest.mark.parametrize("text", ["2026-11-23T10:00:00", "2026-11-23", "yesterday", "1700000000"])
def test_times_without_a_zone_or_malformed_are_refused(text: str) -> None:
    assert refused(parse_time, text, "created_before") == (400, "invalid_time", "created_before")


def test_cursors_round_trip_and_are_url_safe() -> None:
    at = LogPosition(2**63 - 1, 12)
    text = encode_log_cursor(at)
    assert text.replace("-", "").replace("_", "").isalnum()
    assert decode_log_cursor(text) == at and decode_log_cursor(None) is None
    assert decode_sequence_cursor(encode_sequence_cursor(5)) == 5
    assert decode_sequence_cursor(None) == 0


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a cursor",
        "bm9wZQ",  # "nope"
        encode_sequence_cursor(3),  # the other kind
        encode_log_cursor(LogPosition(2**63, 1)),  # beyond bigint
        "x" * 65,
    ],
)
def test_a_log_cursor_not_given_out_is_refused(cursor: str) -> None:
    assert refused(decode_log_cursor, cursor) == (400, "invalid_cursor", "cursor")


def test_a_sequence_cursor_of_the_other_kind_is_refused() -> None:
    cursor = encode_log_cursor(LogPosition(1, 1))
    assert refused(decode_sequence_cursor, cursor) == (400, "invalid_cursor", "cursor")
