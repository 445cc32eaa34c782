"""The expiry loop's pruning of the event log: when it runs, and that a failure never
stops expiries (the deletes themselves: tests/integration/api/test_api_events.py)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.test_intent_plan import SETTINGS

from intentd.lifecycle.expiry import Expiry


class FakePool:
    """Answers ``DELETE n`` for each execute from ``answers`` (an exception is raised)."""

    def __init__(self, *answers: int | Exception) -> None:
        self.answers = list(answers)
        self.calls = 0

    async def execute(self, query: str, *args: Any) -> str:
        assert query.startswith("DELETE FROM intent_events")
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return f"DELETE {answer}"


def expiry(pool: FakePool) -> Expiry:
    return Expiry(SETTINGS, pool, prune_every=3600, prune_batch=10)  # type: ignore[arg-type]


async def test_a_backlog_is_pruned_one_batch_per_round_then_not_before_the_interval() -> None:
    pool = FakePool(10, 10, 3)
    loop = expiry(pool)
    assert [await loop.prune_when_due() for _ in range(5)] == [10, 10, 3, 0, 0]
    assert pool.calls == 3


async def test_a_failed_pruning_is_logged_and_postponed() -> None:
    pool = FakePool(ValueError("bad"))
    loop = expiry(pool)
    assert await loop.prune_when_due() == 0
    assert await loop.prune_when_due() == 0
    assert pool.calls == 1


async def test_an_unavailable_database_is_left_to_the_loop() -> None:
    pool = FakePool(ConnectionRefusedError("down"), 0)
    loop = expiry(pool)
    with pytest.raises(ConnectionRefusedError):
        await loop.prune_when_due()
    assert await loop.prune_when_due() == 0 and pool.calls == 2  # tried again at once
