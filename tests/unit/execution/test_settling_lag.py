"""The executor when its reads land on nodes that lag (issue 18, item 1): a failover URL
blocks behind, a load balancer over backends blocks apart, a receipt index that trails
the blocks. A receipt that is not there (yet) is never evidence that another
transaction took the nonce: nothing is signed again without proof, and every action's
transfer is mined once."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.execution.execution_fakes import RECIPIENT, TOKEN
from tests.unit.execution.test_executor_on_fakes import GAS_TANK, KEYS, RELAYER, Harness

from intentd.chain.errors import ChainUnavailable
from intentd.domain.actions import NATIVE, ActionKind, ActionStatus, SignerKind
from intentd.execution.tracking import TxStatus
from intentd.execution.tx_plans import Purpose


async def test_a_receipt_missing_for_one_tick_after_the_prefill_is_deep_pays_once() -> None:
    h = Harness()
    action_id = h.prefill(7_000_000)
    await h.tick()
    [ours] = h.store.transactions(action_id)
    h.chain.mine(2)  # mined in block 1, at depth (2 confirmations) at head 2
    h.writer.hidden_receipts = 1  # the receipt read lands on a node that lacks it
    await h.tick()
    for _ in range(3):
        await h.tick(mine=1)
    row = h.store.row(action_id)
    assert h.chain.count(RELAYER) == 1, "the relayer paid the recipient twice"
    assert h.statuses(action_id) == [(0, TxStatus.CONFIRMED)]
    assert (row.status, row.tx_hash, row.action.attempts) == (
        ActionStatus.CONFIRMED, ours.tx_hash, 0,
    )  # fmt: skip
    assert h.store.results(action_id) == [("sent", ours.tx_hash), ("confirmed", ours.tx_hash)]


def token_refund(h: Harness, index: int = 3) -> int:
    return h.store.add_action(
        ActionKind.USER_REFUND, signer=SignerKind.INTENT, signer_index=index, amount=3_000_000
    )


async def test_a_refund_whose_receipts_trail_the_head_all_run_is_paid_once() -> None:
    h = Harness()
    h.writer.receipt_lag = 3  # the provider's receipt index is 3 blocks behind its head
    action_id = token_refund(h)
    for _ in range(12):
        await h.tick(mine=1, wait=1)
    topup, transfer = h.store.transactions(action_id)
    assert (topup.purpose, topup.status) == (Purpose.GAS_TOPUP, TxStatus.CONFIRMED)
    assert (transfer.purpose, transfer.status) == (Purpose.TRANSFER, TxStatus.CONFIRMED)
    address = KEYS.address(SignerKind.INTENT, 3)
    assert (h.chain.count(GAS_TANK), h.chain.count(address)) == (1, 1)
    row = h.store.row(action_id)
    assert (row.status, row.action.attempts) == (ActionStatus.CONFIRMED, 0)


async def test_a_prefill_read_through_a_load_balancer_with_a_node_3_behind_is_paid_once() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    lags = itertools.cycle([0, 0, 3])  # every third request lands on the lagging node
    h.writer.behind = lambda: next(lags)
    for _ in range(8):
        with contextlib.suppress(ChainUnavailable):  # the loop backs off and ticks again
            await h.tick(mine=1, wait=1)
    assert h.chain.count(RELAYER) == 1
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED


async def test_a_node_below_the_block_asked_decides_nothing() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    h.chain.mine(2)
    # a node 2 behind that answers counts above its head with its newest count (no error)
    h.writer.behind, h.writer.future_counts = lambda: 2, "latest"
    h.writer.hidden_receipts = 5
    await h.tick()
    assert h.statuses(action_id) == [(0, TxStatus.SENT)]
    assert h.writer.proofs == []  # nothing looked for either: the view is not judged
    h.writer.behind, h.writer.hidden_receipts = lambda: 0, 0
    await h.tick()
    assert h.statuses(action_id) == [(0, TxStatus.CONFIRMED)]


async def test_a_foreign_use_of_our_nonce_is_proven_by_its_hash_even_through_lag() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    foreign = h.chain.use_nonce(RELAYER, 0)
    h.writer.receipt_lag = 1
    h.chain.mine(3)
    await h.tick()
    row = h.store.row(action_id)
    assert h.statuses(action_id) == [(0, TxStatus.DROPPED)]
    assert (
        row.last_error is not None and f"another transaction: {foreign.tx_hash}" in row.last_error
    )
    assert "in block 1" in row.last_error


async def test_our_transaction_found_in_a_block_without_a_readable_receipt_waits() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    h.chain.mine(2)
    h.writer.hidden_receipts = 10  # the index has not got it: not the view, nor the proof
    for _ in range(3):
        await h.tick(wait=40)  # long past stuck_after: still nothing replaced or re-signed
    [(signer, nonce, use)] = h.writer.proofs[:1]
    [ours] = h.store.transactions(action_id)
    assert use is not None and (signer, nonce, use.tx_hash, use.receipt) == (
        RELAYER, 0, ours.tx_hash, None,
    )  # fmt: skip
    assert h.statuses(action_id) == [(0, TxStatus.SENT)] and len(h.chain.broadcasts) == 1
    h.writer.hidden_receipts = 0
    await h.tick()
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED


# --- any lag pattern -------------------------------------------------------------------

step = st.tuples(
    st.lists(st.integers(0, 4), min_size=1, max_size=6),  # how far behind each read lands
    st.integers(0, 3),  # the receipt index's lag
    st.integers(0, 2),  # receipt reads answered empty
    st.integers(0, 2),  # blocks mined before the tick
    st.sampled_from([0.0, 1.0, 31.0]),  # seconds passed (31: stuck, replaced)
)


async def run_scenario(
    steps: list[tuple[list[int], int, int, int, float]], foreign: bool, view_size: int
) -> None:
    h = Harness(max_attempts=3)
    h.writer.view_size = view_size  # small: the groups are judged in several views
    prefill = h.prefill(2_000_000)
    refund = token_refund(h, 3)
    sweep = h.store.add_action(
        ActionKind.FEE_SWEEP, token=NATIVE, amount=10**16, signer=SignerKind.INTENT,
        signer_index=4, gas_from_amount=True,
    )  # fmt: skip
    actions = (prefill, refund, sweep)
    foreign_hash = None

    async def tick(mine: int, wait: float) -> None:
        with contextlib.suppress(ChainUnavailable):  # the loop backs off and ticks again
            await h.tick(mine=mine, wait=wait)

    await tick(0, 0.0)
    if foreign:  # an operator with the relayer key takes the prefill's nonce
        foreign_hash = h.chain.use_nonce(RELAYER, 0).tx_hash
    for behind, receipt_lag, hidden, mine, wait in steps:
        lags: Iterator[int] = itertools.cycle(behind)
        h.writer.behind = lambda lags=lags: next(lags)
        h.writer.receipt_lag, h.writer.hidden_receipts = receipt_lag, hidden
        await tick(mine, wait)
    h.writer.behind, h.writer.receipt_lag, h.writer.hidden_receipts = (lambda: 0), 0, 0
    for _ in range(30):
        if all(h.store.row(a).status is ActionStatus.CONFIRMED for a in actions):
            break
        await tick(1, 1.0)

    mined = h.chain.mined()
    for action_id in actions:
        txs = h.store.transactions(action_id)
        for purpose in Purpose:
            on_chain = [t for t in txs if t.purpose is purpose and t.tx_hash in mined]
            assert len(on_chain) <= 1, f"action {action_id}: {purpose} mined {len(on_chain)}x"
        # nothing signed again without proof: every nonce left behind was used by a
        # transaction that is not ours, found in a block
        by_nonce = {(t.signer, t.nonce) for t in txs}
        for signer, nonce in by_nonce:
            winners = [
                t for t in txs if (t.signer, t.nonce) == (signer, nonce) and t.tx_hash in mined
            ]
            if not winners:
                [(_, user)] = [
                    (n, tx) for n, block in enumerate(h.chain.blocks) for tx in block
                    if (tx.sender, tx.nonce) == (signer, nonce)
                ]  # fmt: skip
                assert user.foreign, f"nonce {nonce} of {signer} re-signed without proof"
        row = h.store.row(action_id)
        assert row.status is ActionStatus.CONFIRMED, (action_id, row)
    assert h.chain.count(RELAYER) == 1 + foreign
    assert sum(1 for _, t in mined.values() if t.to == TOKEN) == 2  # the prefill, the refund
    assert sum(1 for _, t in mined.values() if t.to == RECIPIENT) == 1  # the native sweep
    if foreign_hash is not None:
        error = h.store.row(prefill).last_error
        assert error is not None and foreign_hash in error


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=14), st.booleans(), st.sampled_from([3, 5, 50]))
def test_any_lag_pattern_pays_each_action_once_and_signs_nothing_again_without_proof(
    steps: list[tuple[list[int], int, int, int, float]], foreign: bool, view_size: int
) -> None:
    asyncio.run(run_scenario(steps, foreign, view_size))
