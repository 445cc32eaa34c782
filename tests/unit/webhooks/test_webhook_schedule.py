"""The retry schedule: at least 3 days, jitter only lengthens, Retry-After, 410, 5 days."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from intentd.webhooks.schedule import (
    DELAYS,
    DISABLE_AFTER,
    JITTER,
    MAX_ATTEMPTS,
    MAX_RETRY_AFTER,
    MIN_SPAN,
    DisableReason,
    decide,
    parse_retry_after,
    retry_delay,
)

T0 = datetime(2026, 11, 23, 12, tzinfo=UTC)
draws = st.floats(min_value=0, max_value=1)


def test_the_schedule_spans_at_least_three_days_as_documented() -> None:
    assert timedelta(days=3) <= MIN_SPAN
    assert timedelta(days=3, hours=7, minutes=42, seconds=35) == MIN_SPAN
    assert MAX_ATTEMPTS == 13
    assert list(DELAYS) == sorted(DELAYS)


@given(st.lists(draws, min_size=len(DELAYS), max_size=len(DELAYS)))
def test_a_delivery_that_always_fails_is_retried_for_3_to_4_2_days(jitters: list[float]) -> None:
    now, attempts = T0, 0
    while True:
        attempts += 1
        decision = decide(
            status=500,
            failed_attempts=attempts,
            now=now,
            failing_since=T0,
            draw=jitters[min(attempts - 1, len(jitters) - 1)],
        )
        if decision.next_attempt_at is None:
            break
        assert decision.next_attempt_at > now
        now = decision.next_attempt_at
    assert attempts == MAX_ATTEMPTS
    assert decision.failed and decision.disable is None
    assert MIN_SPAN <= now - T0 <= MIN_SPAN * (1 + JITTER)


@given(st.integers(min_value=1, max_value=len(DELAYS)), draws)
def test_jitter_never_shortens_a_delay(n: int, draw: float) -> None:
    delay = retry_delay(n, draw)
    assert delay is not None
    assert DELAYS[n - 1] <= delay <= DELAYS[n - 1] * (1 + JITTER)


@given(st.integers(min_value=200, max_value=299), st.integers(min_value=1, max_value=13))
def test_any_2xx_delivers(status: int, attempts: int) -> None:
    decision = decide(status=status, failed_attempts=attempts, now=T0, failing_since=T0)
    assert decision.delivered and decision.next_attempt_at is None


def test_410_disables_the_endpoint() -> None:
    decision = decide(status=410, failed_attempts=1, now=T0, failing_since=T0)
    assert decision.disable is DisableReason.GONE and decision.next_attempt_at is None


def test_five_days_of_failure_disable_the_endpoint_but_not_less() -> None:
    almost = decide(
        status=None, failed_attempts=1, now=T0, failing_since=T0 - DISABLE_AFTER + timedelta(1)
    )
    assert almost.disable is None and almost.next_attempt_at is not None
    over = decide(status=None, failed_attempts=1, now=T0, failing_since=T0 - DISABLE_AFTER)
    assert over.disable is DisableReason.FAILING


def test_retry_after_is_honoured_on_429_and_503_only() -> None:
    for status in (429, 503):
        decision = decide(
            status=status, failed_attempts=1, now=T0, failing_since=T0, retry_after="120", draw=0
        )
        assert decision.next_attempt_at == T0 + timedelta(seconds=120)
    plain = decide(
        status=500, failed_attempts=1, now=T0, failing_since=T0, retry_after="120", draw=0
    )
    assert plain.next_attempt_at == T0 + DELAYS[0]
    short = decide(status=429, failed_attempts=4, now=T0, failing_since=T0, retry_after="1", draw=0)
    assert short.next_attempt_at == T0 + DELAYS[3]


def test_retry_after_forms() -> None:
    assert parse_retry_after("30", T0) == timedelta(seconds=30)
    assert parse_retry_after("Mon, 23 Nov 2026 12:01:00 GMT", T0) == timedelta(minutes=1)
    assert parse_retry_after("Mon, 23 Nov 2026 11:00:00 GMT", T0) == timedelta()
    assert parse_retry_after("9999999", T0) == MAX_RETRY_AFTER
    assert parse_retry_after("soon", T0) is None
    assert parse_retry_after(None, T0) is None


_DAYS = st.sampled_from(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Xyz", ""])
_MONTHS = st.sampled_from(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec", "Foo"]
)
_NUMBERS = st.integers(min_value=-(10**30), max_value=10**30).map(str)
_ZONES = st.one_of(
    st.sampled_from(["GMT", "UTC", "UT", "EST", "PDT", "Z", ""]),
    st.tuples(st.sampled_from("+-"), st.integers(0, 99999)).map(lambda z: f"{z[0]}{z[1]:04d}"),
)
HTTP_DATES = st.builds(
    lambda day, d, month, year, h, m, s, zone: f"{day}, {d} {month} {year} {h}:{m}:{s} {zone}",
    _DAYS,
    _NUMBERS,
    _MONTHS,
    _NUMBERS,
    _NUMBERS,
    _NUMBERS,
    _NUMBERS,
    _ZONES,
)
"""RFC 9110 IMF-fixdate shapes with any numbers in them (huge years, offsets, negatives)."""
HOSTILE = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(categories=["Nd", "No", "Nl"])),  # "²", "٣", "Ⅻ"
    _NUMBERS,
    st.from_regex(r"\A[ \t]*[+-]?[0-9]{1,60}(\.[0-9]*)?([eE][+-]?[0-9]{1,5})?[ \t]*\Z"),
    st.sampled_from(
        ["NaN", "nan", "inf", "-inf", "Infinity", "1e999", "0x10", "²", "99999999999999999999"]
    ),
    HTTP_DATES,
)


@given(HOSTILE, st.datetimes(timezones=st.just(UTC)))
def test_any_retry_after_gives_a_bounded_wait_or_none(value: str, now: datetime) -> None:
    wait = parse_retry_after(value, now)
    assert wait is None or timedelta() <= wait <= MAX_RETRY_AFTER


@given(HOSTILE, st.integers(min_value=1, max_value=MAX_ATTEMPTS), draws)
def test_any_retry_after_on_429_or_503_gives_a_bounded_next_attempt(
    value: str, attempts: int, draw: float
) -> None:
    for status in (429, 503):
        decision = decide(
            status=status,
            failed_attempts=attempts,
            now=T0,
            failing_since=T0,
            retry_after=value,
            draw=draw,
        )
        if attempts > len(DELAYS):
            assert decision.next_attempt_at is None
            continue
        assert decision.next_attempt_at is not None
        scheduled = retry_delay(attempts, draw)
        assert scheduled is not None
        assert T0 + scheduled <= decision.next_attempt_at
        assert decision.next_attempt_at <= T0 + max(scheduled, MAX_RETRY_AFTER)


def test_hostile_retry_after_values_seen_in_the_wild() -> None:
    assert parse_retry_after("99999999999999999999", T0) == MAX_RETRY_AFTER
    assert parse_retry_after("²", T0) is None  # a digit to str.isdigit, not to HTTP
    assert parse_retry_after("٣", T0) is None  # an Arabic-Indic 3: not delta-seconds
    assert parse_retry_after("-5", T0) is None
    assert parse_retry_after("NaN", T0) is None
    assert parse_retry_after("Fri, 31 Dec 99999 23:59:59 GMT", T0) is None
    assert parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", T0) == MAX_RETRY_AFTER
    assert parse_retry_after(" 0030 ", T0) == timedelta(seconds=30)
