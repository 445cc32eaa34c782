"""A client's budget of test, redeliver and recover calls: a token bucket (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.webhooks.send_budget import Budget, retry_after, take

T0 = datetime(2026, 11, 23, 12, tzinfo=UTC)


@given(
    st.integers(1, 600),
    st.lists(st.floats(min_value=0, max_value=30, allow_nan=False), min_size=1, max_size=300),
)
def test_no_window_admits_more_than_a_minutes_worth_plus_its_refill(
    per_minute: int, gaps: list[float]
) -> None:
    budget, now, granted = None, T0, []
    for gap in gaps:
        now += timedelta(seconds=gap)
        budget, wait = take(budget, now, per_minute)
        assert budget.tokens >= 0 and wait >= 0
        if wait == 0:
            granted.append(now)
    # In any window [t, t + w]: at most per_minute (the burst) + w * per_minute / 60.
    for i, start in enumerate(granted):
        for j in range(i, len(granted)):
            window = (granted[j] - start).total_seconds()
            assert j - i + 1 <= per_minute + window * per_minute / 60 + 1e-6


@given(st.integers(1, 600), st.integers(0, 2000))
def test_a_refused_call_goes_ahead_after_its_retry_after(per_minute: int, calls: int) -> None:
    budget: Budget | None = None
    for _ in range(calls):
        budget, _ = take(budget, T0, per_minute)
    budget, wait = take(budget, T0, per_minute)
    if wait == 0:
        assert calls < per_minute
        return
    assert calls >= per_minute
    later, again = take(budget, T0 + timedelta(seconds=retry_after(wait)), per_minute)
    assert again == 0 and later.tokens >= 0


def test_a_burst_of_a_minutes_worth_then_one_per_refill() -> None:
    budget, waits = None, []
    for _ in range(61):
        budget, wait = take(budget, T0, 60)
        waits.append(wait)
    assert waits[:60] == [0.0] * 60
    assert waits[60] == pytest.approx(1.0)
    assert retry_after(waits[60]) == 1
    assert take(budget, T0 + timedelta(seconds=1), 60)[1] == 0.0
    # A clock that goes back refills nothing and takes nothing it should not.
    assert take(Budget(0.5, T0), T0 - timedelta(hours=1), 60)[1] == pytest.approx(0.5)
