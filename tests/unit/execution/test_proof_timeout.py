"""A proof read (a nonce's use, the receipts' view) that a hung provider never answers
ends after ``execution.proof_timeout``: the judgement is "unknown, wait", never
"consumed", and the executor's tick goes on (issue 19, executor lag, finding 4)."""

from __future__ import annotations

import asyncio

import pytest
from tests.unit.execution.test_executor_on_fakes import RELAYER, Harness

from intentd.domain.actions import ActionStatus
from intentd.execution.tracking import TxStatus
from intentd.settings import ExecutionConfig


def test_the_proof_timeout_defaults_to_10_seconds() -> None:
    assert ExecutionConfig().proof_timeout == 10.0


async def test_a_hung_nonce_use_read_ends_the_wait_unknown_not_consumed() -> None:
    h = Harness(proof_timeout=0.2)
    action_id = h.prefill()
    await h.tick()
    h.chain.mine(2)
    h.writer.hidden_receipts = 10  # no receipt: the nonce's use must be looked for
    h.writer.hung.add("nonce_use")
    await asyncio.wait_for(h.tick(), timeout=5)  # today: the tick hangs for ever
    assert h.statuses(action_id) == [(0, TxStatus.SENT)]
    assert h.store.row(action_id).status is ActionStatus.SUBMITTED
    assert h.store.row(action_id).action.attempts == 0
    h.writer.hung.clear()
    h.writer.hidden_receipts = 0
    await h.tick()
    assert h.statuses(action_id) == [(0, TxStatus.CONFIRMED)]
    assert h.chain.count(RELAYER) == 1


@pytest.mark.parametrize("read", ["view"])
async def test_a_hung_receipts_view_decides_nothing_and_the_tick_goes_on(read: str) -> None:
    h = Harness(proof_timeout=0.2)
    action_id = h.prefill()
    await h.tick()
    h.chain.mine(2)
    h.writer.hung.add(read)
    await asyncio.wait_for(h.tick(), timeout=5)
    assert h.statuses(action_id) == [(0, TxStatus.SENT)]
    h.writer.hung.clear()
    await h.tick()
    assert h.statuses(action_id) == [(0, TxStatus.CONFIRMED)]
