"""Throttling, session ends, passwords and the second factor (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyotp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intentd.access import passwords
from intentd.access.second_factor import (
    code_hash,
    new_recovery_codes,
    new_totp_secret,
    otpauth_uri,
    totp_step,
)
from intentd.access.session_policy import SessionState, SessionTimes, session_state, should_touch
from intentd.access.throttle import (
    Counter,
    ThrottlePolicy,
    after_failure,
    given_back,
    remaining_lock,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
POLICY = ThrottlePolicy()


def test_an_account_locks_at_its_limit_and_the_lock_doubles_then_caps() -> None:
    counter = None
    for i in range(1, POLICY.account_limit):
        counter = after_failure(counter, T0, POLICY.account_limit, POLICY)
        assert remaining_lock(counter, T0) is None, i
    counter = after_failure(counter, T0, POLICY.account_limit, POLICY)
    assert remaining_lock(counter, T0) == POLICY.base_lock
    counter = after_failure(counter, T0, POLICY.account_limit, POLICY)
    assert remaining_lock(counter, T0) == 2 * POLICY.base_lock
    for _ in range(40):
        counter = after_failure(counter, T0, POLICY.account_limit, POLICY)
    assert remaining_lock(counter, T0) == POLICY.max_lock


@settings(max_examples=200)
@given(
    gaps=st.lists(st.integers(min_value=0, max_value=3600), min_size=1, max_size=200),
    limit=st.integers(min_value=1, max_value=50),
)
def test_no_number_of_failures_locks_anyone_for_longer_than_the_cap(
    gaps: list[int], limit: int
) -> None:
    """An attacker failing at any pace never holds a lock longer than max_lock past its
    last failure: the lock ends by itself."""
    counter: Counter | None = None
    now = T0
    for gap in gaps:
        now += timedelta(seconds=gap)
        counter = after_failure(counter, now, limit, POLICY)
        left = remaining_lock(counter, now)
        assert left is None or left <= POLICY.max_lock
    assert remaining_lock(counter, now + POLICY.max_lock) is None


def test_failures_age_out_of_the_window() -> None:
    counter = after_failure(None, T0, 3, POLICY)
    counter = after_failure(counter, T0 + timedelta(seconds=1), 3, POLICY)
    later = after_failure(counter, T0 + POLICY.window, 3, POLICY)
    assert later.failures == 1
    assert remaining_lock(later, T0 + POLICY.window) is None


def test_a_success_gives_back_its_attempt_and_the_lock_counting_it_set() -> None:
    limit = 3
    counter = None
    admitted = []
    for _ in range(limit):  # admitted at once, each counted before its check
        counter = after_failure(counter, T0, limit, POLICY)
        admitted.append(counter)
    assert counter is not None
    assert remaining_lock(counter, T0) == POLICY.base_lock  # the next one waits
    counter = given_back(counter, admitted[-1], limit)  # ... but the last one succeeded
    assert (counter.failures, remaining_lock(counter, T0)) == (limit - 1, None)
    assert given_back(counter, admitted[0], limit).failures == limit - 2


def test_an_attempt_of_a_window_that_restarted_is_not_given_back() -> None:
    admitted = after_failure(None, T0, 3, POLICY)
    later = after_failure(admitted, T0 + POLICY.window, 3, POLICY)  # a new window
    assert given_back(later, admitted, 3) == later


@settings(max_examples=300)
@given(
    limit=st.integers(min_value=1, max_value=8),
    steps=st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(0, 50)), max_size=80),
)
def test_attempts_in_flight_and_failed_never_exceed_the_limit(
    limit: int, steps: list[tuple[bool, bool, int]]
) -> None:
    """Attempts arrive and end in any interleaving (one window): an attempt is admitted
    unless locked, counted then; a success gives its attempt back. The counter always
    holds exactly the attempts in flight or failed, never more than the limit of them,
    and is locked exactly when it holds the limit."""
    counter: Counter | None = None
    flight: list[tuple[Counter, bool]] = []  # admitted, not ended: (as admitted, succeeds)
    failed = 0
    for arrives, succeeds, pick in steps:
        if arrives or not flight:
            if remaining_lock(counter, T0) is None:
                counter = after_failure(counter, T0, limit, POLICY)
                flight.append((counter, succeeds))
        else:
            admitted, success = flight.pop(pick % len(flight))
            assert counter is not None
            if success:
                counter = given_back(counter, admitted, limit)
            else:
                failed += 1
        held = counter.failures if counter is not None else 0
        assert held == len(flight) + failed
        assert held <= limit
        assert (remaining_lock(counter, T0) is not None) == (held >= limit)


@pytest.mark.parametrize(
    ("now", "revoked", "state"),
    [
        (T0 + timedelta(minutes=10), None, SessionState.ACTIVE),
        (T0 + timedelta(minutes=31), None, SessionState.IDLE),
        (T0 + timedelta(hours=13), None, SessionState.EXPIRED),
        (T0 + timedelta(minutes=1), T0, SessionState.REVOKED),
    ],
)
def test_session_state(now: datetime, revoked: datetime | None, state: SessionState) -> None:
    times = SessionTimes(T0, T0, T0 + timedelta(hours=12), revoked)
    assert session_state(times, now, timedelta(minutes=30)) is state


def test_a_session_is_touched_at_most_once_a_minute() -> None:
    times = SessionTimes(T0, T0, T0 + timedelta(hours=1), None)
    assert not should_touch(times, T0 + timedelta(seconds=59))
    assert should_touch(times, T0 + timedelta(seconds=60))


def test_password_policy_and_check() -> None:
    assert passwords.password_problem("short", "a@b.c") is not None
    assert passwords.password_problem("a@b.example.c", "a@b.example.c") is not None
    assert passwords.password_problem("aaaaaaaaaaaaaa", "a@b.c") is not None
    assert passwords.password_problem("x" * 257, "a@b.c") is not None
    assert passwords.password_problem("correct horse battery", "a@b.c") is None
    stored = passwords.hash_password("correct horse battery")
    assert stored.startswith("$argon2id$")
    assert passwords.check_password(stored, "correct horse battery")
    assert not passwords.check_password(stored, "correct horse batterY")
    assert not passwords.check_password(None, "anything at all here")
    assert not passwords.check_password(stored, "x" * 10_000)


def test_a_totp_code_is_accepted_once_and_within_one_step() -> None:
    secret = new_totp_secret()
    now = 1_800_000_000.0
    code = pyotp.TOTP(secret).at(now)
    step = totp_step(secret, code, now, None)
    assert step == int(now) // 30
    assert totp_step(secret, code, now, step) is None  # replayed
    assert totp_step(secret, code, now + 30, None) == step  # one step of drift
    assert totp_step(secret, code, now + 90, None) is None  # too late
    assert totp_step(secret, "12345", now, None) is None
    assert totp_step(secret, "abcdef", now, None) is None
    uri = otpauth_uri(secret, "ann@example.com")
    assert uri.startswith("otpauth://totp/intentd%3Aann%40example.com?secret=")


def test_recovery_codes_are_distinct_and_hashed_whatever_their_spelling() -> None:
    codes = new_recovery_codes()
    assert len(set(codes)) == len(codes) == 10
    assert code_hash(codes[0].upper()) == code_hash(codes[0].replace("-", " "))
    assert code_hash(codes[0]) != code_hash(codes[1])
