"""Pure decisions of the executor's loop: nonce groups, inclusion, replacements."""

from __future__ import annotations

from dataclasses import replace

from intentd.domain.actions import NATIVE, Action, ActionKind, SignerKind
from intentd.execution.gas import Fees
from intentd.execution.replacement import (
    needs_budget,
    replacement_cap,
    replacement_plan,
    signer_of,
    topup_budget,
)
from intentd.execution.tracking import (
    Receipt,
    Tx,
    TxStatus,
    depth_block,
    newly_included,
    nonce_groups,
)
from intentd.execution.tx_plans import Purpose

SIGNER, OTHER = "0x" + "aa" * 20, "0x" + "bb" * 20
TOKEN, TO = "0x" + "cc" * 20, "0x" + "dd" * 20
GWEI = 10**9
OLD_FEES = Fees(10 * GWEI, GWEI)


def tx(
    n: int,
    status: TxStatus = TxStatus.SENT,
    *,
    nonce: int = 0,
    signer: str = SIGNER,
    purpose: Purpose = Purpose.TRANSFER,
    value: int = 0,
    gas_limit: int = 50_000,
    fees: Fees = OLD_FEES,
) -> Tx:
    return Tx(
        id=n, action_id=1, purpose=purpose, signer=signer, nonce=nonce, tx_hash=f"0x{n:064x}",
        raw=b"", to=TO, value=value, gas_limit=gas_limit, fees=fees, status=status,
        block_number=None, age=0.0,
    )  # fmt: skip


def action(
    token: str = TOKEN, signer: SignerKind = SignerKind.INTENT, *, amount: int = 10**6
) -> Action:
    return Action(
        id=1, intent_id=2, kind=ActionKind.USER_REFUND, chain="X", token=token, amount=amount,
        to_address=TO, signer_kind=signer, signer_index=4, gas_from_amount=token == NATIVE,
        attempts=0,
    )  # fmt: skip


def test_nonce_groups_hold_the_open_transactions_by_signer_and_nonce_in_order() -> None:
    txs = [
        tx(1, TxStatus.REPLACED), tx(2, TxStatus.DROPPED, nonce=1), tx(3, signer=OTHER),
        tx(4), tx(5, TxStatus.CONFIRMED, nonce=2), tx(6, TxStatus.SIGNED, nonce=3),
    ]  # fmt: skip
    groups = nonce_groups(txs)
    assert [[t.id for t in group] for group in groups] == [[1, 4], [3], [6]]
    assert nonce_groups([tx(1, TxStatus.CONFIRMED), tx(2, TxStatus.DROPPED)]) == []


def test_depth_block_and_inclusion() -> None:
    assert depth_block(10, 1) == 10 and depth_block(10, 3) == 8 and depth_block(1, 5) == 0
    mined = replace(tx(1, TxStatus.MINED), block_number=7)
    at = Receipt(mined.tx_hash, 7, "0x" + "0" * 64, True, 21_000, 1)
    assert not newly_included(mined, at)
    assert newly_included(mined, replace(at, block_number=8))  # a reorg moved it
    assert newly_included(tx(1, TxStatus.SENT), at)


def test_a_replacement_raises_both_fees_and_keeps_every_other_field() -> None:
    stale = tx(1, purpose=Purpose.GAS_TOPUP, value=123, gas_limit=21_000)
    plan = replacement_plan(action(), stale, base_fee=GWEI, tip=GWEI, cap=500 * GWEI)
    assert plan is not None
    assert (plan.purpose, plan.to, plan.value, plan.data, plan.gas_limit) == (
        Purpose.GAS_TOPUP, TO, 123, b"", 21_000,
    )  # fmt: skip
    assert plan.fees.max_fee_per_gas * 8 >= stale.fees.max_fee_per_gas * 9
    assert plan.fees.max_priority_fee_per_gas * 8 >= stale.fees.max_priority_fee_per_gas * 9


def test_a_replacement_follows_the_market_when_it_moved_further() -> None:
    plan = replacement_plan(action(), tx(1), base_fee=50 * GWEI, tip=GWEI, cap=500 * GWEI)
    assert plan is not None and plan.fees.max_fee_per_gas >= 100 * GWEI


def test_no_replacement_above_the_cap_nor_a_native_sweep_left_with_nothing() -> None:
    assert replacement_plan(action(), tx(1), base_fee=GWEI, tip=GWEI, cap=11 * GWEI) is None
    sweep = action(NATIVE, amount=21_000 * 11 * GWEI)  # covers the old fees, not the bump
    stale = tx(1, value=21_000 * 2 * GWEI, gas_limit=21_000)
    assert replacement_plan(sweep, stale, base_fee=GWEI, tip=GWEI, cap=500 * GWEI) is None
    richer = replace(sweep, amount=21_000 * 20 * GWEI)
    plan = replacement_plan(richer, stale, base_fee=GWEI, tip=GWEI, cap=500 * GWEI)
    assert plan is not None and plan.value == richer.amount - 21_000 * plan.fees.max_fee_per_gas


def test_a_topped_up_transfer_is_replaced_only_within_what_the_top_up_pays() -> None:
    stale = tx(1, gas_limit=50_000)
    assert needs_budget(action(), stale)
    assert not needs_budget(action(signer=SignerKind.RELAYER), stale)
    assert not needs_budget(action(), tx(2, purpose=Purpose.GAS_TOPUP))
    assert not needs_budget(action(NATIVE), stale)
    assert replacement_cap(500 * GWEI, action(), stale, 50_000 * 11 * GWEI) == 11 * GWEI
    assert replacement_cap(500 * GWEI, action(signer=SignerKind.RELAYER), stale, 0) == 500 * GWEI


def test_the_topup_budget_is_the_newest_confirmed_topup() -> None:
    history = [
        tx(1, TxStatus.CONFIRMED, purpose=Purpose.GAS_TOPUP, value=5),
        tx(2, TxStatus.REVERTED, nonce=1),
        tx(3, TxStatus.CONFIRMED, purpose=Purpose.GAS_TOPUP, value=9, nonce=2),
        tx(4, TxStatus.SENT, purpose=Purpose.GAS_TOPUP, value=99, nonce=3),
    ]
    assert topup_budget(history) == 9 and topup_budget([]) == 0


def test_the_gas_tank_signs_top_ups_and_the_action_its_transfer() -> None:
    assert signer_of(action(), Purpose.GAS_TOPUP) == (SignerKind.GAS_TANK, None)
    assert signer_of(action(), Purpose.TRANSFER) == (SignerKind.INTENT, 4)
