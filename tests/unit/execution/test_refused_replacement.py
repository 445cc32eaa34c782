"""A replacement the node refuses (``replacement transaction underpriced``) keeps its
nonce: the action never gets a new nonce while an earlier signed transaction of it may
still be mined, so the recipient is paid once (issue 19, executor lag, finding 1)."""

from __future__ import annotations

from tests.unit.execution.test_executor_on_fakes import RELAYER, Harness

from intentd.domain.actions import ActionStatus
from intentd.execution.ports import SendOutcome
from intentd.execution.tracking import TxStatus


async def test_a_refused_replacement_keeps_the_nonce_and_the_recipient_is_paid_once() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    [first] = h.store.transactions(action_id)
    refused = (SendOutcome.UNDERPRICED, "replacement transaction underpriced")
    h.chain.refusals.extend([refused] * 6)
    for _ in range(3):  # stuck, replaced, the replacement refused tick after tick
        await h.tick(wait=31)
    txs = h.store.transactions(action_id)
    assert {tx.nonce for tx in txs} == {0}, "a refused replacement got a new nonce"
    assert txs[0].status is TxStatus.REPLACED and txs[-1].status is TxStatus.SIGNED
    assert list(h.chain.pool) == [first.tx_hash]  # ours, the old one, is still in the pool
    await h.tick(mine=2)
    await h.tick(mine=1)
    assert h.chain.count(RELAYER) == 1, "the recipient was paid twice"
    row = h.store.row(action_id)
    assert (row.status, row.tx_hash, row.action.attempts) == (
        ActionStatus.CONFIRMED, first.tx_hash, 0,
    )  # fmt: skip
    assert {tx.nonce for tx in h.store.transactions(action_id)} == {0}
