"""``wait.wait_any`` and ``backoff.Backoff``: the one wait and the one backoff of every loop."""

from __future__ import annotations

import asyncio
import math
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.backoff import Backoff
from intentd.wait import wait_any


async def test_wait_any_returns_when_an_event_is_set() -> None:
    stop, wakeup = asyncio.Event(), asyncio.Event()
    asyncio.get_running_loop().call_later(0.01, wakeup.set)
    started = time.monotonic()
    assert await wait_any(stop, wakeup, within=5)
    assert time.monotonic() - started < 1
    assert not stop.is_set()


async def test_wait_any_times_out_quietly_and_leaves_no_waiter() -> None:
    before = len(asyncio.all_tasks())
    assert not await wait_any(asyncio.Event(), asyncio.Event(), within=0.01)
    await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == before


async def test_wait_any_cancelled_leaves_no_waiter() -> None:
    before = len(asyncio.all_tasks())
    waiting = asyncio.create_task(wait_any(asyncio.Event(), within=None))
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == before


_backoffs = st.builds(
    Backoff,
    initial=st.floats(0, 100),
    factor=st.floats(1, 10),
    cap=st.floats(0, 1000) | st.just(math.inf),
    jitter=st.just(0.0),
)


@given(_backoffs, st.integers(1, 500))
def test_delays_grow_up_to_the_cap(backoff: Backoff, attempt: int) -> None:
    delay, following = backoff.delay(attempt), backoff.delay(attempt + 1)
    assert 0 <= delay <= following <= backoff.cap
    assert backoff.delay(1) == min(backoff.initial, backoff.cap)


@given(_backoffs, st.integers(1, 60))
def test_after_follows_the_same_sequence(backoff: Backoff, attempts: int) -> None:
    previous = 0.0
    for expected, _ in zip(backoff.delays(), range(attempts), strict=False):
        previous = backoff.after(previous)
        assert previous == pytest.approx(expected)


@given(
    st.floats(0, 10),
    st.floats(0, 10),
    st.floats(0, 100),
    st.integers(1, 100),
    st.floats(0, 1),
)
def test_jitter_adds_at_most_jitter_and_never_passes_the_cap(
    initial: float, jitter: float, cap: float, attempt: int, fraction: float
) -> None:
    plain = Backoff(initial, cap=cap)
    jittered = Backoff(initial, cap=cap, jitter=jitter)
    delay = jittered.delay(attempt, uniform=lambda low, high: low + (high - low) * fraction)
    assert plain.delay(attempt) <= delay <= min(cap, plain.delay(attempt) + jitter) + 1e-9


def test_known_sequences() -> None:
    assert list(zip(range(6), Backoff(0.5, cap=10).delays(), strict=False)) == list(
        enumerate([0.5, 1.0, 2.0, 4.0, 8.0, 10.0])
    )
    with pytest.raises(ValueError, match="attempt"):
        Backoff(1).delay(0)
    with pytest.raises(ValueError, match="invalid"):
        Backoff(1, factor=0.5)
