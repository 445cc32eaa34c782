"""Verdicts on nonce groups, the retry policy and transaction planning."""

from __future__ import annotations

from dataclasses import replace

import pytest

from intentd.domain.actions import NATIVE, Action, ActionKind, SignerKind
from intentd.execution.gas import AmountBelowGas, Fees
from intentd.execution.policy import GiveUp, RetryLater, RetryPolicy, after_failure
from intentd.execution.tracking import (
    Consumed,
    Final,
    Included,
    NonceUse,
    Pending,
    Receipt,
    Tx,
    TxStatus,
    Unexplained,
    at_depth,
    judge_group,
    judge_use,
    next_transfer_due,
)
from intentd.execution.tx_plans import (
    Purpose,
    erc20_transfer_data,
    needs_topup,
    topup_tx,
    transfer_tx,
)

SIGNER = "0x" + "aa" * 20
TOKEN = "0x" + "cc" * 20
TO = "0x" + "dd" * 20


def tx(
    n: int,
    status: TxStatus = TxStatus.SENT,
    *,
    age: float = 0.0,
    nonce: int = 7,
    purpose: Purpose = Purpose.TRANSFER,
) -> Tx:
    return Tx(
        id=n, action_id=1, purpose=purpose, signer=SIGNER, nonce=nonce, tx_hash=f"0x{n:064x}",
        raw=b"", to=TO, value=0, gas_limit=21_000, fees=Fees(10, 1), status=status,
        block_number=None, age=age,
    )  # fmt: skip


def receipt(t: Tx, block: int, ok: bool = True) -> Receipt:
    return Receipt(t.tx_hash, block, f"0x{block:064x}", ok, 21_000, 5)


def judge(txs: list[Tx], receipts: dict[str, Receipt | None], **kw: object) -> object:
    args: dict[str, object] = {
        "head": 100, "confirmations": 3, "mined_nonces": 7, "stuck_after": 30.0,
    }  # fmt: skip
    args.update(kw)
    return judge_group(txs, receipts, **args)  # type: ignore[arg-type]


def test_depth_counts_the_block_itself() -> None:
    assert at_depth(98, 100, 3) and not at_depth(99, 100, 3) and at_depth(100, 100, 1)


def test_the_old_transaction_wins_when_it_is_mined_instead_of_its_replacement() -> None:
    old, new = tx(1, TxStatus.REPLACED), tx(2)
    verdict = judge([old, new], {old.tx_hash: receipt(old, 98), new.tx_hash: None}, mined_nonces=8)
    assert verdict == Final(old, receipt(old, 98), (new,))


def test_mined_but_shallow_waits() -> None:
    old, new = tx(1, TxStatus.REPLACED), tx(2)
    verdict = judge([old, new], {new.tx_hash: receipt(new, 99)}, mined_nonces=8)
    assert verdict == Included(new, receipt(new, 99))


def test_a_nonce_used_at_depth_without_a_receipt_of_ours_is_never_consumed_on_that_alone() -> None:
    group = [tx(1, TxStatus.REPLACED), tx(2)]
    verdict = judge(group, {}, mined_nonces=8)
    assert isinstance(verdict, Unexplained) and verdict.txs == tuple(group)


def use(block: int, tx_hash: str, found: Receipt | None = None) -> NonceUse:
    return NonceUse(block, f"0x{block:064x}", tx_hash, found)


def test_a_nonce_proven_used_at_depth_by_another_transaction_drops_the_group() -> None:
    group = [tx(1, TxStatus.REPLACED), tx(2)]
    other = use(98, "0x" + "ee" * 32)
    assert judge_use(group, other, head=100, confirmations=3) == Consumed(tuple(group), other)


def test_a_nonce_proven_used_by_one_of_ours_is_final_with_its_receipt() -> None:
    old, new = tx(1, TxStatus.REPLACED), tx(2)
    found = use(97, old.tx_hash, receipt(old, 97))
    verdict = judge_use([old, new], found, head=100, confirmations=3)
    assert verdict == Final(old, receipt(old, 97), (new,))


@pytest.mark.parametrize(
    "found",
    [
        None,  # nothing found, or the answers disagreed
        use(97, f"0x{1:064x}"),  # ours, but no receipt readable yet
        use(97, f"0x{1:064x}", receipt(tx(9), 97)),  # a receipt that is not of that one
        use(99, "0x" + "ee" * 32),  # another transaction, above depth
    ],
)
def test_without_proof_the_group_waits(found: NonceUse | None) -> None:
    group = [tx(1, TxStatus.REPLACED), tx(2)]
    verdict = judge_use(group, found, head=100, confirmations=3)
    assert isinstance(verdict, Unexplained) and verdict.txs == tuple(group)


def test_pending_group_broadcasts_the_unsent_and_flags_the_stale() -> None:
    signed = tx(1, TxStatus.SIGNED)
    assert judge([signed], {}) == Pending((signed,), (), None, signed)
    stale = tx(2, age=31.0)
    assert judge([stale], {}) == Pending((), (), stale, stale)
    fresh = tx(3, age=5.0)
    assert judge([fresh], {}) == Pending((), (), None, fresh)


def test_a_reorged_transaction_is_unmined() -> None:
    mined = tx(1, TxStatus.MINED)
    assert judge([mined], {mined.tx_hash: None}) == Pending((), (mined,), None, mined)


def test_a_node_below_the_recorded_block_does_not_unmine_it() -> None:
    mined = replace(tx(1, TxStatus.MINED), block_number=101)
    assert judge([mined], {mined.tx_hash: None}) == Pending((), (), None, mined)
    assert judge([mined], {}, head=101) == Pending((), (mined,), None, mined)


def test_a_group_has_one_nonce() -> None:
    with pytest.raises(ValueError, match="one nonce"):
        judge([tx(1), tx(2, nonce=8)], {})


def test_the_transfer_follows_a_confirmed_topup_even_with_dropped_siblings() -> None:
    topup = tx(1, TxStatus.CONFIRMED, purpose=Purpose.GAS_TOPUP)
    sibling = tx(2, TxStatus.DROPPED, purpose=Purpose.GAS_TOPUP)
    assert next_transfer_due([topup, sibling])
    assert not next_transfer_due([topup, sibling, tx(3, TxStatus.SIGNED)])
    assert not next_transfer_due([])


@pytest.mark.parametrize(
    ("before", "expected"),
    [(0, RetryLater(1, 5.0)), (1, RetryLater(2, 10.0)), (2, GiveUp(3)), (5, GiveUp(6))],
)
def test_retry_policy(before: int, expected: object) -> None:
    assert after_failure(before, RetryPolicy(max_attempts=3, backoff=5.0)) == expected


def test_backoff_is_bounded() -> None:
    policy = RetryPolicy(max_attempts=20, backoff=5.0, backoff_max=60.0)
    assert after_failure(10, policy) == RetryLater(11, 60.0)


def action(token: str, signer: SignerKind, *, gas_from_amount: bool = False) -> Action:
    return Action(
        id=1, intent_id=2, kind=ActionKind.USER_REFUND, chain="X", token=token, amount=10**16,
        to_address=TO, signer_kind=signer, signer_index=5, gas_from_amount=gas_from_amount,
        attempts=0,
    )  # fmt: skip


def test_erc20_calldata() -> None:
    data = erc20_transfer_data(TO, 5)
    assert data.hex() == "a9059cbb" + "00" * 12 + "dd" * 20 + f"{5:064x}"


def test_plans() -> None:
    fees = Fees(3 * 10**9, 10**9)
    token = transfer_tx(action(TOKEN, SignerKind.INTENT), 60_000, fees)
    assert (token.to, token.value, token.data) == (TOKEN, 0, erc20_transfer_data(TO, 10**16))
    assert needs_topup(action(TOKEN, SignerKind.INTENT))
    assert not needs_topup(action(TOKEN, SignerKind.RELAYER))
    assert not needs_topup(action(NATIVE, SignerKind.INTENT))
    sweep = transfer_tx(action(NATIVE, SignerKind.INTENT, gas_from_amount=True), 21_000, fees)
    assert (sweep.to, sweep.value) == (TO, 10**16 - 21_000 * 3 * 10**9)
    whole = transfer_tx(action(NATIVE, SignerKind.RELAYER), 21_000, fees)
    assert whole.value == 10**16
    topup = topup_tx(SIGNER, 60_000, fees, headroom_bps=10_000)
    assert topup is not None
    assert (topup.purpose, topup.to, topup.value) == (
        Purpose.GAS_TOPUP,
        SIGNER,
        2 * 60_000 * 3 * 10**9,
    )
    # the gas tank's credit at the address (left by earlier sweeps) is used first
    less = topup_tx(SIGNER, 60_000, fees, headroom_bps=10_000, credit=10**14)
    assert less is not None and less.value == 2 * 60_000 * 3 * 10**9 - 10**14
    assert topup_tx(SIGNER, 60_000, fees, headroom_bps=10_000, credit=4 * 10**14) is None
    dust = action(NATIVE, SignerKind.INTENT, gas_from_amount=True)
    with pytest.raises(AmountBelowGas):
        transfer_tx(dust, 21_000, Fees(10**12, 0))


def test_a_receipt_carries_the_op_stack_l1_data_fee_when_the_chain_charges_one() -> None:
    from intentd.adapters.evm.chain_writer import (
        _receipt,  # the parser of eth_getTransactionReceipt
    )

    answer = {
        "transactionHash": "0x" + "AB" * 32,
        "blockNumber": "0x10",
        "blockHash": "0x" + "cd" * 32,
        "status": "0x1",
        "gasUsed": "0x5208",
        "effectiveGasPrice": "0xa",
    }
    plain = _receipt(answer)
    on_base = _receipt({**answer, "l1Fee": "0x1388"})
    assert plain is not None and on_base is not None
    assert (plain.l1_fee, on_base.l1_fee) == (0, 5_000)
    assert on_base.tx_hash == "0x" + "ab" * 32
