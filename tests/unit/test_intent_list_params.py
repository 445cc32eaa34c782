"""``api.intents.list_params``: cursors round-trip and refuse what the route did not give out;
the metadata filter needs both halves."""

from __future__ import annotations

import pytest

from intentd.adapters.postgres.event_log import LogPosition
from intentd.adapters.postgres.intent_list import ListPosition
from intentd.api.events.params import encode_log_cursor
from intentd.api.intents.list_params import decode_list_cursor, encode_list_cursor, metadata_filter
from intentd.api.problems import ApiProblem


def test_a_cursor_round_trips() -> None:
    for at in (ListPosition(0, 1), ListPosition(2**63 - 1, 2**63 - 1)):
        assert decode_list_cursor(encode_list_cursor(at)) == at
    assert decode_list_cursor(None) is None


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "abc",
        "!!!!",
        encode_log_cursor(LogPosition(1, 2)),  # the event log's
        "aTo5MjIzMzcyMDM2ODU0Nzc1ODA4OjE",  # i:2**63:1, past bigint
    ],
)
def test_a_foreign_cursor_is_invalid(cursor: str) -> None:
    with pytest.raises(ApiProblem) as raised:
        decode_list_cursor(cursor)
    assert (raised.value.status, raised.value.code) == (400, "invalid_cursor")


def test_the_metadata_filter_needs_both_halves() -> None:
    assert metadata_filter(None, None) is None
    assert metadata_filter("order_id", "A-1") == ("order_id", "A-1")
    for key, value, missing in (("k", None, "metadata_value"), (None, "v", "metadata_key")):
        with pytest.raises(ApiProblem) as raised:
            metadata_filter(key, value)
        assert (raised.value.code, raised.value.field) == ("incomplete_metadata_filter", missing)
