"""A native sweep on an OP-stack chain, through the executor over its fakes: the first
transfer and each replacement leave the oracle's L1 data fee bound plus the margin; no
bound, nothing signed (docs/execution.md, OP-stack L1 data fee of a native sweep).
The oracle is :class:`FakeL1Fees`; the real-chain version is
``tests/integration/test_l1_fee_sweeps.py``."""

from __future__ import annotations

from prometheus_client import REGISTRY
from tests.unit.execution.execution_fakes import FakeL1Fees
from tests.unit.execution.test_executor_on_fakes import CHAIN, KEYS, Harness

from intentd.domain.actions import NATIVE, ActionKind, ActionStatus, SignerKind
from intentd.execution.gas import NATIVE_TRANSFER_GAS, l1_fee_reserve, topup_value
from intentd.execution.tracking import TxStatus
from intentd.execution.tx_plans import Purpose

AMOUNT = 10**15
"""What the intent address holds and the sweep moves (wei)."""
BOUND = 3 * 10**12
"""What the fake oracle answers (synthetic, wei)."""
MARGIN_BPS = 2_500  # the default execution.l1_fee_margin_bps
TOPUP_HEADROOM_BPS = 10_000  # the default execution.topup_headroom_bps


def native_sweep(h: Harness) -> int:
    return h.store.add_action(
        ActionKind.USER_REFUND, token=NATIVE, amount=AMOUNT, signer=SignerKind.INTENT,
        signer_index=5, gas_from_amount=True,
    )  # fmt: skip


def l1_fee_unknown() -> float:
    labels = {"chain": CHAIN, "kind": "user_refund", "outcome": "l1_fee_unknown"}
    return REGISTRY.get_sample_value("intentd_action_outcomes_total", labels) or 0.0


async def test_a_native_sweep_without_an_oracle_answer_waits_unsigned() -> None:
    oracle = FakeL1Fees(bound=None)
    h = Harness(l1_fees=oracle)
    action_id = native_sweep(h)
    unknown = l1_fee_unknown()
    await h.tick()
    row = h.store.row(action_id)
    assert (row.status, row.action.attempts) == (ActionStatus.READY, 0)
    assert row.not_before == h.store.now + 30
    assert "GasPriceOracle" in (row.last_error or "")
    assert h.store.transactions(action_id) == [] and h.chain.broadcasts == []
    assert h.store.results(action_id) == []
    assert l1_fee_unknown() == unknown + 1
    [asked] = oracle.asked  # about the sweep as planned without a reserve
    assert asked.value == AMOUNT - NATIVE_TRANSFER_GAS * asked.fees.max_fee_per_gas

    await h.tick(wait=29)  # not due yet: not planned again
    assert len(oracle.asked) == 1 and h.chain.broadcasts == []

    oracle.bound = BOUND  # the oracle answers: the sweep goes out, leaving the reserve
    await h.tick(wait=2)
    [tx] = h.store.transactions(action_id)
    assert (tx.purpose, tx.signer, tx.status) == (
        Purpose.TRANSFER, KEYS.address(SignerKind.INTENT, 5), TxStatus.SENT,
    )  # fmt: skip
    reserve = l1_fee_reserve(BOUND, MARGIN_BPS)
    assert reserve == BOUND * 5 // 4
    assert tx.value == AMOUNT - NATIVE_TRANSFER_GAS * tx.fees.max_fee_per_gas - reserve
    await h.tick(mine=2)
    row = h.store.row(action_id)
    assert (row.status, row.amount_sent) == (ActionStatus.CONFIRMED, tx.value)


async def test_a_replacement_of_a_native_sweep_plans_its_reserve_again() -> None:
    oracle = FakeL1Fees(bound=BOUND)
    h = Harness(l1_fees=oracle)
    action_id = native_sweep(h)
    await h.tick()
    [first] = h.store.transactions(action_id)
    gas = NATIVE_TRANSFER_GAS
    reserve = l1_fee_reserve(BOUND, MARGIN_BPS)
    assert first.value == AMOUNT - gas * first.fees.max_fee_per_gas - reserve

    h.chain.base_fee *= 3  # L2 fees and L1 prices moved while it was stuck
    oracle.bound = 2 * BOUND
    await h.tick(wait=31)
    old, new = h.store.transactions(action_id)
    assert (old.status, new.status) == (TxStatus.REPLACED, TxStatus.SENT)
    assert new.nonce == old.nonce and new.fees.max_fee_per_gas > old.fees.max_fee_per_gas
    reserve = l1_fee_reserve(2 * BOUND, MARGIN_BPS)  # asked again, at today's L1 prices
    assert new.value == AMOUNT - gas * new.fees.max_fee_per_gas - reserve
    _, asked = oracle.asked  # about the replacement at its own fees, before the reserve
    assert asked.fees == new.fees and asked.value == AMOUNT - gas * new.fees.max_fee_per_gas

    await h.tick(mine=2)
    assert h.statuses(action_id) == [(0, TxStatus.DROPPED), (0, TxStatus.CONFIRMED)]
    assert h.store.row(action_id).amount_sent == new.value


async def test_a_stuck_native_sweep_is_not_replaced_without_an_oracle_answer() -> None:
    oracle = FakeL1Fees(bound=BOUND)
    h = Harness(l1_fees=oracle)
    action_id = native_sweep(h)
    await h.tick()
    [first] = h.store.transactions(action_id)
    sent = list(h.chain.broadcasts)

    h.chain.base_fee *= 3
    oracle.bound = None  # the oracle stops answering: no replacement is signed
    await h.tick(wait=31)
    assert h.statuses(action_id) == [(first.nonce, TxStatus.SENT)]
    assert h.chain.broadcasts == sent and list(h.chain.pool) == [first.tx_hash]
    assert h.store.transactions(action_id)[0].age == 0  # its stuck clock restarted
    assert len(oracle.asked) == 2

    oracle.bound = BOUND  # it answers again: the next stuck look replaces it
    await h.tick(wait=31)
    old, new = h.store.transactions(action_id)
    assert (old.status, new.status) == (TxStatus.REPLACED, TxStatus.SENT)
    reserve = l1_fee_reserve(BOUND, MARGIN_BPS)
    assert new.value == AMOUNT - NATIVE_TRANSFER_GAS * new.fees.max_fee_per_gas - reserve


def token_sweep(h: Harness) -> int:
    return h.store.add_action(
        ActionKind.USER_REFUND, signer=SignerKind.INTENT, signer_index=3, amount=3_000_000
    )


async def test_a_token_sweeps_top_up_also_pays_the_l1_fee_of_its_transfer() -> None:
    """On an OP-stack chain the intent address pays the ERC-20 transfer's L1 data fee
    on top of its gas: a top-up without it leaves a transfer op-geth refuses forever."""
    oracle = FakeL1Fees(bound=BOUND)
    h = Harness(l1_fees=oracle)
    action_id = token_sweep(h)
    await h.tick()
    [topup] = h.store.transactions(action_id)
    assert topup.purpose is Purpose.GAS_TOPUP
    [asked] = oracle.asked  # about the ERC-20 transfer the top-up pays for
    assert (asked.purpose, asked.value, asked.data[:4]) == (
        Purpose.TRANSFER,
        0,
        bytes.fromhex("a9059cbb"),
    )
    need = topup_value(asked.gas_limit, asked.fees, TOPUP_HEADROOM_BPS)
    assert topup.value == need + l1_fee_reserve(BOUND, MARGIN_BPS)

    await h.tick(mine=2)  # the top-up is final: the transfer follows, within the top-up
    _, transfer = h.store.transactions(action_id)
    assert transfer.purpose is Purpose.TRANSFER
    assert transfer.gas_limit * transfer.fees.max_fee_per_gas + BOUND <= topup.value


async def test_a_token_sweeps_top_up_waits_unsigned_without_an_oracle_answer() -> None:
    oracle = FakeL1Fees(bound=None)
    h = Harness(l1_fees=oracle)
    action_id = token_sweep(h)
    unknown = l1_fee_unknown()
    await h.tick()
    row = h.store.row(action_id)
    assert (row.status, row.action.attempts) == (ActionStatus.READY, 0)
    assert h.store.transactions(action_id) == [] and h.chain.broadcasts == []
    assert l1_fee_unknown() == unknown + 1


async def test_a_token_transfer_signed_in_a_dear_market_still_leaves_its_l1_fee() -> None:
    """Fees rose while the top-up was mined: the transfer offers what the top-up
    affords, less the L1 data fee reserve (all of it would leave op-geth refusing it)."""
    oracle = FakeL1Fees(bound=BOUND)
    h = Harness(l1_fees=oracle)
    action_id = token_sweep(h)
    await h.tick()
    [topup] = h.store.transactions(action_id)
    h.chain.base_fee *= 3
    await h.tick(mine=2)
    _, transfer = h.store.transactions(action_id)
    assert transfer.purpose is Purpose.TRANSFER
    reserve = l1_fee_reserve(BOUND, MARGIN_BPS)
    assert transfer.gas_limit * transfer.fees.max_fee_per_gas + reserve <= topup.value


async def test_a_replaced_token_transfer_still_leaves_its_l1_fee() -> None:
    """A stuck transfer is bumped only as far as the top-up affords after the L1 data
    fee reserve (here the L1 fee is half the gas: a bump into it is not signed)."""
    bound = 10**14
    h = Harness(l1_fees=FakeL1Fees(bound=bound))
    action_id = token_sweep(h)
    await h.tick()
    [topup] = h.store.transactions(action_id)
    await h.tick(mine=2)
    h.chain.base_fee *= 3  # the transfer is stuck in a dearer market
    await h.tick(wait=31)
    reserve = l1_fee_reserve(bound, MARGIN_BPS)
    transfers = [tx for tx in h.store.transactions(action_id) if tx.purpose is Purpose.TRANSFER]
    assert transfers
    for tx in transfers:
        assert tx.gas_limit * tx.fees.max_fee_per_gas + reserve <= topup.value
