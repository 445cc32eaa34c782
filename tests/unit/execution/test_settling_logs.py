"""A nonce group waiting for proof of who used its nonce is told in a few lines, not one
per tick (the chaos run counted 116 warnings from one executor over 4 bursts of ~5 s of
receipts trailing the blocks): one when it starts waiting, a summary every 30 s while
it waits, one when it is decided. The metric still counts every undecided tick."""

from __future__ import annotations

import structlog
from prometheus_client import REGISTRY
from tests.unit.execution.test_executor_on_fakes import CHAIN, Harness

from intentd.domain.actions import ActionStatus

WAITING = "nonce used with no receipt of ours and no proof of who used it; waiting, nothing signed"


def undecided(reason: str) -> float:
    labels = {"chain": CHAIN, "reason": reason}
    return REGISTRY.get_sample_value("intentd_settle_undecided_total", labels) or 0.0


async def test_a_group_waiting_for_proof_is_one_line_then_one_when_decided() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    h.chain.mine(2)
    h.writer.hidden_receipts = 10**6  # every receipt read lands on a node without it
    before = undecided("nonce_unproven")
    with structlog.testing.capture_logs() as logs:
        for _ in range(20):
            await h.tick()
        h.writer.hidden_receipts = 0
        await h.tick()
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED
    assert undecided("nonce_unproven") - before == 20  # each tick still counted
    waiting = [entry for entry in logs if entry["event"] == WAITING]
    assert len(waiting) == 1, f"{len(waiting)} lines for one wait"
    assert waiting[0]["log_level"] == "warning"
    [decided] = [entry for entry in logs if entry["event"] == "nonce group decided"]
    assert decided["log_level"] == "info" and decided["times"] == 20
    assert (decided["signer"], decided["nonce"]) == (waiting[0]["signer"], waiting[0]["nonce"])
