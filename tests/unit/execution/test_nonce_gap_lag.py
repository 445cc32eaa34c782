"""The nonce-gap alarm of a signer's reconcile decides only on a node at or past the
highest head seen: a lagging node's low count is no gap (issue 19, executor lag,
finding 3)."""

from __future__ import annotations

from structlog.testing import capture_logs
from tests.unit.execution.test_executor_on_fakes import KEYS, Harness

from intentd import observability as metrics
from intentd.domain.actions import NATIVE, ActionKind, ActionStatus, SignerKind
from intentd.execution.tracking import TxStatus

CHAIN = "FAKECHAIN"


def sweep(h: Harness) -> int:
    return h.store.add_action(
        ActionKind.FEE_SWEEP, token=NATIVE, amount=10**16, signer=SignerKind.INTENT,
        signer_index=4, gas_from_amount=True,
    )  # fmt: skip


def gaps() -> float:
    return metrics.NONCE_GAPS.labels(CHAIN)._value.get()


async def test_a_lagging_latest_count_raises_no_nonce_gap_alarm() -> None:
    h = Harness()
    first = sweep(h)
    await h.tick()
    await h.tick(mine=2)
    assert h.statuses(first) == [(0, TxStatus.CONFIRMED)]  # nonce 0 of the address is used
    h.chain.mine(5)
    h.restart()  # a new process: the signer is reconciled again at its next use
    await h.writer.head()  # the head seen
    h.writer.behind = lambda: 7  # then every read lands on a node below our transaction
    second = sweep(h)
    before = gaps()
    with capture_logs() as logs:
        await h.tick()
    assert gaps() == before, "a lagging node's count raised a nonce gap alarm"
    assert not [e for e in logs if e["event"].startswith("nonce gap:")]
    [tx] = h.store.transactions(second)
    assert (tx.signer, tx.nonce) == (KEYS.address(SignerKind.INTENT, 4), 1)
    h.writer.behind = lambda: 0
    await h.tick(mine=2)
    assert h.store.row(second).status is ActionStatus.CONFIRMED


async def test_a_real_gap_on_a_current_node_is_still_an_alarm() -> None:
    h = Harness()
    first = sweep(h)
    await h.tick()
    await h.tick(mine=2)
    assert h.statuses(first) == [(0, TxStatus.CONFIRMED)]
    address = KEYS.address(SignerKind.INTENT, 4)
    h.store.state.nonces[address] = 3  # nonces 1 and 2 handed out, nothing of ours on them
    h.restart()
    sweep(h)
    before = gaps()
    await h.tick()
    assert gaps() == before + 2
