"""Fee and gas arithmetic of the executor (who pays what, and how much)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.execution.gas import (
    NATIVE_TRANSFER_GAS,
    AmountBelowGas,
    FeeCapExceeded,
    Fees,
    affordable_fee,
    bumped_fees,
    gas_cost,
    gas_limit_with_margin,
    initial_fees,
    native_sweep_value,
    topup_after_credit,
    topup_value,
)

GWEI = 10**9
wei = st.integers(min_value=0, max_value=10_000 * GWEI)


@pytest.mark.parametrize(
    ("base", "tip", "cap", "expected"),
    [
        (GWEI, GWEI, 100 * GWEI, Fees(3 * GWEI, GWEI)),  # 2 x base + tip
        (7, 0, 100, Fees(14, 0)),  # an idle anvil: tiny base fee, no tip
        (10 * GWEI, 2 * GWEI, 15 * GWEI, Fees(15 * GWEI, 2 * GWEI)),  # capped fee, tip kept
        (10 * GWEI, 8 * GWEI, 12 * GWEI, Fees(12 * GWEI, 2 * GWEI)),  # tip fits under the cap
    ],
)
def test_initial_fees(base: int, tip: int, cap: int, expected: Fees) -> None:
    assert initial_fees(base, tip, cap) == expected


def test_a_base_fee_at_the_cap_means_wait() -> None:
    with pytest.raises(FeeCapExceeded):
        initial_fees(100, 1, 100)


@given(base=wei, tip=wei, cap=st.integers(min_value=1, max_value=10**22))
def test_initial_fees_never_exceed_the_cap_and_cover_the_base_fee(
    base: int, tip: int, cap: int
) -> None:
    try:
        fees = initial_fees(base, tip, cap)
    except FeeCapExceeded:
        assert base >= cap
        return
    assert fees.max_fee_per_gas <= cap
    assert fees.max_fee_per_gas > base  # includable now
    assert fees.max_priority_fee_per_gas <= tip


@given(base=wei, tip=wei, old_fee=st.integers(1, 10**13), old_tip=st.integers(0, 10**13))
def test_a_replacement_pays_at_least_an_eighth_more_on_both_fields(
    base: int, tip: int, old_fee: int, old_tip: int
) -> None:
    old = Fees(max(old_fee, old_tip, 1), old_tip)
    new = bumped_fees(old, base, tip, cap=10**30)
    assert new is not None
    assert new.max_fee_per_gas * 8 >= old.max_fee_per_gas * 9
    assert new.max_priority_fee_per_gas * 8 >= old.max_priority_fee_per_gas * 9
    assert new.max_fee_per_gas >= 2 * base + new.max_priority_fee_per_gas


def test_a_replacement_above_the_cap_is_refused() -> None:
    assert bumped_fees(Fees(100, 10), base_fee=1, tip=1, cap=112) is None
    assert bumped_fees(Fees(100, 10), base_fee=1, tip=1, cap=113) == Fees(113, 12)


@given(
    amount=st.integers(1, 10**30),
    gas_limit=st.integers(NATIVE_TRANSFER_GAS, 10**6),
    fee=st.integers(1, 10**12),
    used_fraction=st.fractions(0, 1),
)
def test_a_native_sweep_never_spends_more_than_the_amount(
    amount: int, gas_limit: int, fee: int, used_fraction: object
) -> None:
    fees = Fees(fee, 0)
    try:
        value = native_sweep_value(amount, gas_limit, fees)
    except AmountBelowGas:
        assert amount <= gas_limit * fee
        return
    # whatever the block charges (effective price <= max fee), value + gas <= amount,
    # and what is left at the address is exactly the fee the block did not take
    effective = fee  # the worst case
    assert value + gas_cost(gas_limit, effective) == amount
    cheaper = fee // 2
    left = amount - value - gas_cost(gas_limit, cheaper)
    assert left == gas_limit * (fee - cheaper) >= 0


def test_native_sweep_of_a_plain_transfer() -> None:
    # 0.01 ETH at 3 gwei max fee: 21,000 x 3 gwei = 63,000 gwei reserved for gas
    assert native_sweep_value(10**16, 21_000, Fees(3 * GWEI, GWEI)) == 10**16 - 63_000 * GWEI
    with pytest.raises(AmountBelowGas):
        native_sweep_value(63_000 * GWEI, 21_000, Fees(3 * GWEI, GWEI))


@given(
    gas_limit=st.integers(21_000, 10**6),
    fee=st.integers(1, 10**12),
    headroom=st.integers(0, 50_000),
)
def test_a_topup_pays_for_the_transfer_and_its_replacements(
    gas_limit: int, fee: int, headroom: int
) -> None:
    value = topup_value(gas_limit, Fees(fee, 0), headroom)
    assert value >= gas_limit * fee * (10_000 + headroom) // 10_000
    assert affordable_fee(value, gas_limit) >= fee  # the first transfer is always affordable


def test_topup_with_the_default_headroom_covers_five_bumps() -> None:
    value = topup_value(60_000, Fees(3 * GWEI, GWEI), 10_000)
    assert value == 2 * 60_000 * 3 * GWEI
    fees = Fees(3 * GWEI, GWEI)
    for _ in range(5):
        bumped = bumped_fees(fees, GWEI, GWEI, cap=affordable_fee(value, 60_000))
        assert bumped is not None
        fees = bumped
    assert bumped_fees(fees, GWEI, GWEI, cap=affordable_fee(value, 60_000)) is None


def test_gas_limit_margin_rounds_up() -> None:
    assert gas_limit_with_margin(51_335) == 64_169
    assert gas_limit_with_margin(40_000, 0) == 40_000


@given(st.integers(0, 10**18), st.integers(0, 10**18))
def test_a_topup_after_credit_plus_the_credit_covers_the_need(need: int, credit: int) -> None:
    sent = topup_after_credit(need, credit)
    assert sent + credit >= need
    assert 0 <= sent <= need
    assert sent == 0 or sent + credit == need  # never more than what is missing


def test_an_op_stack_transaction_costs_its_l1_data_fee_on_top_of_gas() -> None:
    assert gas_cost(21_000, 10) == 210_000
    assert gas_cost(21_000, 10, l1_fee=5_000) == 215_000
