"""Token buckets: the rate holds over time, bursts are bounded, Retry-After is honest."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.api.callers.ratelimit import RateLimiter, TokenBucket, retry_after_seconds


def test_bucket_starts_full_then_refuses_with_the_wait() -> None:
    bucket = TokenBucket(rate=2, capacity=2, now=0.0)
    assert bucket.take(0.0) == 0.0
    assert bucket.take(0.0) == 0.0
    assert bucket.take(0.0) == pytest.approx(0.5)
    assert bucket.take(0.5) == 0.0


@given(
    st.integers(min_value=1, max_value=1000),
    st.lists(st.floats(min_value=0, max_value=0.05), min_size=1, max_size=400),
)
def test_admitted_never_exceeds_capacity_plus_rate_times_elapsed(
    rate: int, gaps: list[float]
) -> None:
    bucket = TokenBucket(rate=rate, capacity=rate, now=0.0)
    now, admitted = 0.0, 0
    for gap in gaps:
        now += gap
        admitted += bucket.take(now) == 0.0
    assert admitted <= rate + rate * now + 1e-6


@given(st.integers(min_value=1, max_value=500), st.floats(min_value=0, max_value=5))
def test_a_refused_request_succeeds_after_the_wait(rate: int, start: float) -> None:
    bucket = TokenBucket(rate=rate, capacity=max(1, rate), now=start)
    while (wait := bucket.take(start)) == 0.0:
        pass
    assert bucket.take(start + wait + 1e-9) == 0.0


def test_limit_is_divided_among_replicas() -> None:
    limiter = RateLimiter(replicas=4)
    admitted = sum(limiter.check("k", 100, 0.0) == 0.0 for _ in range(100))
    assert admitted == 25


def test_keys_have_separate_buckets_and_a_new_limit_applies_at_once() -> None:
    limiter = RateLimiter()
    assert limiter.check("a", 1, 0.0) == 0.0
    assert limiter.check("a", 1, 0.0) > 0
    assert limiter.check("b", 1, 0.0) == 0.0
    assert limiter.check("a", 5, 0.0) == 0.0


@pytest.mark.parametrize(("wait", "header"), [(0.001, 1), (0.5, 1), (1.0, 1), (1.2, 2)])
def test_retry_after_is_whole_seconds_rounded_up(wait: float, header: int) -> None:
    assert retry_after_seconds(wait) == header
