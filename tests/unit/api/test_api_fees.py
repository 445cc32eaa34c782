"""Fee arithmetic: never undercharged, at most one base unit over per fee, sums exact."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.domain.fees import (
    FeeSchedule,
    MissingPrice,
    ceil_fraction,
    charge,
    convert_units,
    to_usd,
)

amounts = st.integers(min_value=0, max_value=10**30)
decimals = st.integers(min_value=0, max_value=18)
money = st.decimals(min_value=0, max_value=1000, places=4, allow_nan=False)
bps = st.decimals(min_value=0, max_value=10_000, places=2, allow_nan=False)
prices = st.decimals(min_value=Decimal("0.0001"), max_value=100_000, places=4, allow_nan=False)


def exact(amount: int, schedule: FeeSchedule, places: int, price: Decimal) -> Fraction:
    return Fraction(amount) * Fraction(schedule.bps) / 10_000 + Fraction(
        schedule.fixed_usd
    ) * 10**places / Fraction(price)


@given(amounts, decimals, prices, money, bps, money, bps)
def test_fees_round_up_by_less_than_a_unit(  # noqa: PLR0917 - hypothesis passes positionally
    amount: int,
    places: int,
    price: Decimal,
    route_fixed: Decimal,
    route_bps: Decimal,
    app_fixed: Decimal,
    app_bps: Decimal,
) -> None:
    route, app = FeeSchedule(route_fixed, route_bps), FeeSchedule(app_fixed, app_bps)
    fees = charge(amount, places, price, route=route, app=app)
    for charged, schedule in ((fees.route_fee, route), (fees.app_fee, app)):
        owed = exact(amount, schedule, places, price)
        assert owed <= charged < owed + 1
    assert fees.total == amount + fees.route_fee + fees.app_fee


@given(amounts, decimals, prices, money, bps)
def test_usd_figures_add_up(
    amount: int, places: int, price: Decimal, fixed: Decimal, points: Decimal
) -> None:
    fees = charge(amount, places, price, route=FeeSchedule(fixed, points), app=FeeSchedule())
    with localcontext() as ctx:
        ctx.prec = 200
        parts = to_usd(amount, places, price) + to_usd(fees.route_fee, places, price)
        assert to_usd(fees.total, places, price) == parts + to_usd(fees.app_fee, places, price)


@given(st.integers(0, 10**24), st.integers(0, 10**24), decimals, bps)
def test_more_amount_never_costs_less(a: int, b: int, places: int, points: Decimal) -> None:
    low, high = sorted((a, b))
    schedule = FeeSchedule(Decimal(0), points)
    fee = lambda x: charge(x, places, None, route=schedule, app=schedule)  # noqa: E731
    assert fee(low).total <= fee(high).total


def test_zero_schedule_charges_nothing_even_without_a_price() -> None:
    fees = charge(12_500_000, 6, None, route=FeeSchedule(), app=FeeSchedule())
    assert (fees.route_fee, fees.app_fee, fees.total) == (0, 0, 12_500_000)


@pytest.mark.parametrize(
    ("amount", "places", "price", "route", "app", "expected"),
    [
        # 10 USDC, 0.10 USD + 5 bps route, 10 bps app: 0.105 and 0.01 USDC
        (10_000_000, 6, "1", ("0.10", "5"), ("0", "10"), (105_000, 10_000)),
        # 0.01 ETH at 3000 USD: 0.10 USD is 1/30000 ETH, rounded up to a wei
        (10**16, 18, "3000", ("0.10", "0"), ("0", "0"), (33_333_333_333_334, 0)),
        # 1 base unit at 1 bps: 0.0001 rounds up to 1
        (1, 6, "1", ("0", "1"), ("0", "0"), (1, 0)),
    ],
)
def test_fee_table(  # noqa: PLR0917 - parametrize passes positionally
    amount: int,
    places: int,
    price: str,
    route: tuple[str, str],
    app: tuple[str, str],
    expected: tuple[int, int],
) -> None:
    fees = charge(
        amount,
        places,
        Decimal(price),
        route=FeeSchedule(Decimal(route[0]), Decimal(route[1])),
        app=FeeSchedule(Decimal(app[0]), Decimal(app[1])),
    )
    assert (fees.route_fee, fees.app_fee) == expected


def test_fixed_fee_needs_a_price() -> None:
    with pytest.raises(MissingPrice):
        charge(1, 18, None, route=FeeSchedule(Decimal("0.1")), app=FeeSchedule())


def test_invalid_schedules_are_refused() -> None:
    with pytest.raises(ValueError, match="invalid fee"):
        FeeSchedule(Decimal(-1))
    with pytest.raises(ValueError, match="invalid fee"):
        FeeSchedule(bps=Decimal(10_001))


@given(st.fractions(min_value=0, max_value=10**9), prices, prices, decimals)
def test_conversion_rounds_in_the_right_direction(
    value: Fraction, source: Decimal, target: Decimal, places: int
) -> None:
    owed = value * Fraction(source) / Fraction(target) * 10**places
    up = convert_units(value, source, target, places, round_up=True)
    down = convert_units(value, source, target, places, round_up=False)
    assert down <= owed <= up and up - down <= 1


@given(st.fractions())
def test_ceil_fraction(value: Fraction) -> None:
    assert value <= ceil_fraction(value) < value + 1
