"""Judging one feed's answer, our view of its chain, and the L2 sequencer: table-driven,
plus properties (exact scaling, staleness only grows with time)."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.pricing.pricing_fakes import NOW, round_, usd

from intentd.pricing.rounds import (
    FUTURE_TOLERANCE,
    ChainView,
    FeedReading,
    FeedRule,
    Limits,
    Refusal,
    Round,
    judge_round,
    judge_sequencer,
    judge_view,
)

RULE = FeedRule(heartbeat=1200, min=Decimal(100), max=Decimal(100_000))
LIMITS = Limits(max_read_age=30, max_block_age=120)


def judged(found: Round | None, decimals: int | None = 8, problem: str | None = None) -> object:
    return judge_round(FeedReading(found, decimals, problem), RULE, NOW)


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (round_(usd("3000.12345678")), Decimal("3000.12345678")),
        (round_(usd("100")), Decimal(100)),  # the bounds are inclusive
        (round_(usd("100000")), Decimal(100_000)),
        (round_(usd("3000"), updated=NOW - 1200), Decimal(3000)),  # exactly the heartbeat
        (round_(usd("3000"), updated=NOW + FUTURE_TOLERANCE), Decimal(3000)),  # clock skew
        (round_(usd("3000"), updated=NOW - 1201), "stale: round 7 was updated 1201 s ago"),
        (round_(usd("3000"), updated=0), "round 7 is incomplete (updatedAt 0"),
        (round_(usd("3000"), answered_in=6), "round 7 is incomplete"),
        (round_(0), "round 7 answered 0, not a price"),
        (round_(-usd("3000")), "answered -300000000000, not a price"),
        (round_(usd("99.99999999")), "outside the feed's bounds [100, 100000]"),
        (round_(usd("100000.00000001")), "outside the feed's bounds"),
        (round_(usd("3000"), updated=NOW + FUTURE_TOLERANCE + 1), "in our future"),
        (None, "no answer"),
    ],
)
def test_a_round_is_used_only_when_complete_fresh_and_within_bounds(
    found: Round | None, expected: Decimal | str
) -> None:
    verdict = judged(found)
    if isinstance(expected, Decimal):
        assert verdict == expected
    else:
        assert isinstance(verdict, Refusal)
        assert expected in verdict.reason


def test_an_unread_or_undecodable_feed_is_refused_saying_why() -> None:
    assert judge_round(None, RULE, NOW) == Refusal("not read yet")
    verdict = judged(None, None, "latestRoundData answered '0x': no feed there?")
    assert verdict == Refusal("latestRoundData answered '0x': no feed there?")


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        (ChainView(5, int(NOW - 2), NOW - 3), None),
        (ChainView(5, int(NOW - 120), NOW - 30), None),
        (ChainView(5, int(NOW - 2), NOW - 31), "last read 31 s ago"),
        (ChainView(5, int(NOW - 121), NOW), "block 5, whose timestamp is 121 s old"),
    ],
)
def test_a_view_too_old_or_from_a_node_behind_is_refused(
    view: ChainView, expected: str | None
) -> None:
    verdict = judge_view(view, NOW, LIMITS)
    if expected is None:
        assert verdict is None
    else:
        assert verdict is not None
        assert expected in verdict.reason


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (Round(3, 0, int(NOW - 3601), int(NOW - 3601), 3), None),
        (Round(3, 0, int(NOW - 3600), int(NOW - 86_400), 3), None),  # updatedAt not judged
        (Round(3, 1, int(NOW - 10), int(NOW - 10), 3), "the sequencer is down"),
        (Round(3, 0, int(NOW - 3599), int(NOW - 3599), 3), "came back up 3599 s ago"),
        (Round(3, 0, 0, int(NOW - 10), 3), "round is invalid (startedAt 0)"),
        (Round(3, 2, int(NOW - 9000), int(NOW - 9000), 3), "answered 2, neither 0 nor 1"),
        (None, "sequencer uptime feed: no answer"),
    ],
)
def test_prices_wait_for_the_sequencer_and_its_grace(
    status: Round | None, expected: str | None
) -> None:
    verdict = judge_sequencer(FeedReading(status, None), 3600, NOW)
    if expected is None:
        assert verdict is None
    else:
        assert verdict is not None
        assert expected in verdict.reason
    assert judge_sequencer(None, 3600, NOW) == Refusal("sequencer uptime feed not read yet")


@given(
    answer=st.integers(min_value=1, max_value=2**255 - 1),
    decimals=st.integers(min_value=0, max_value=36),
)
def test_an_accepted_answer_is_exactly_answer_over_ten_to_the_decimals(
    answer: int, decimals: int
) -> None:
    wide = FeedRule(heartbeat=1200, min=Decimal("1e-40"), max=Decimal("1e80"))
    verdict = judge_round(FeedReading(round_(answer), decimals), wide, NOW)
    assert isinstance(verdict, Decimal)
    assert Fraction(verdict) * 10**decimals == answer  # exact: no float, no rounding


@given(
    age=st.integers(min_value=-FUTURE_TOLERANCE, max_value=10_000),
    later=st.integers(min_value=0, max_value=10_000),
)
def test_staleness_only_grows_with_time(age: int, later: int) -> None:
    found = FeedReading(round_(usd("3000"), updated=NOW - age), 8)
    before = judge_round(found, RULE, NOW)
    after = judge_round(found, RULE, NOW + later)
    if isinstance(before, Refusal) and "stale" in before.reason:
        assert isinstance(after, Refusal)
    assert isinstance(before, Decimal) == (age <= RULE.heartbeat)
