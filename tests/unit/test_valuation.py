"""Revaluing an intent at the price of its payment (``domain.valuation``): properties over
integers in base units and exact prices, and the worked examples of docs/pricing.md."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from intentd.domain.fees import convert_units
from intentd.domain.valuation import (
    Owed,
    Rate,
    Revaluation,
    highest_price,
    lowest_price,
    principal_at,
    revalue,
    tolerance,
)

# USD prices with a feed's 8 decimals, from a cent to a million
PRICES = st.integers(min_value=10**6, max_value=10**14).map(lambda n: Decimal(n).scaleb(-8))
OWED = st.integers(min_value=1, max_value=10**12).map(lambda n: Decimal(n).scaleb(-6))
SLIPPAGE = st.integers(min_value=0, max_value=5_000).map(lambda bps: Decimal(bps) / 10_000)
FEES = st.integers(min_value=0, max_value=10**18)
DECIMALS = st.sampled_from([(18, 18), (6, 6), (18, 6), (6, 18), (8, 8)])


@st.composite
def intents(draw: st.DrawFn) -> tuple[Owed, Rate, int, int, int, int]:
    """(owed, creation rate, total due, fees, decimals in, decimals out) as created."""
    owed = Owed(draw(OWED), "USD", draw(SLIPPAGE))
    created = Rate(draw(PRICES), Decimal(1))
    d_in, d_out = draw(DECIMALS)
    fees = draw(FEES)
    principal = principal_at(owed, created, d_in, d_out)
    return owed, created, principal + fees, fees, d_in, d_out


@given(intents())
def test_at_the_creation_prices_nothing_moves(made: tuple[Owed, Rate, int, int, int, int]) -> None:
    owed, created, total, fees, d_in, d_out = made
    found = revalue(owed, created, total_due=total, fees=fees, decimals_in=d_in, decimals_out=d_out)
    assert (found.principal, found.total_due, found.raised) == (total - fees, total, False)
    assert found.relayer_bears == 0


@given(OWED, PRICES, st.sampled_from([6, 18]))
def test_the_principal_is_what_creation_computes(owed: Decimal, price: Decimal, d: int) -> None:
    """The quote's conversion (``domain.fees.convert_units``, rounded up), to the base unit."""
    expected = convert_units(Fraction(owed), Decimal(1), price, d, round_up=True)
    assert principal_at(Owed(owed, "USD", Decimal(0)), Rate(price, Decimal(1)), d, d) == expected


def revalued(made: tuple[Owed, Rate, int, int, int, int], price: Decimal) -> Revaluation:
    """``made``'s intent revalued at ``price``."""
    owed, _, total, fees, d_in, d_out = made
    return revalue(
        owed, Rate(price, Decimal(1)), total_due=total, fees=fees, decimals_in=d_in,
        decimals_out=d_out,
    )  # fmt: skip


@given(intents(), PRICES)
def test_the_relayer_never_bears_more_than_the_slippage(
    made: tuple[Owed, Rate, int, int, int, int], price: Decimal
) -> None:
    owed, _, total, fees, _, _ = made
    found = revalued(made, price)
    assert found.total_due >= total  # never lowered
    assert found.relayer_bears <= found.tolerance == tolerance(found.principal, owed.slippage)
    assert found.tolerance * 10_000 <= found.principal * owed.slippage * 10_000
    # paid exactly the (new) total: repaid total - fees, pays the recipient principal
    assert found.principal - (found.total_due - fees) <= found.tolerance
    if found.raised:
        assert found.total_due == found.principal + fees and found.relayer_bears == 0


@given(intents(), PRICES)
def test_the_recipient_never_gets_less_than_owed_at_the_price_used(
    made: tuple[Owed, Rate, int, int, int, int], price: Decimal
) -> None:
    owed, _, _, _, d_in, d_out = made
    found = revalued(made, price)
    assert Fraction(found.amount_out, 10**d_out) * Fraction(price) >= Fraction(owed.amount)
    # and by less than one base unit of tokenIn (and one of tokenOut) more
    step = Fraction(10 ** max(d_in - d_out, 0), 10**d_in)
    assert Fraction(found.amount_out, 10**d_out) - step - Fraction(1, 10**d_in) < Fraction(
        owed.amount
    ) / Fraction(price)


@given(intents(), PRICES, PRICES)
def test_a_lower_price_never_asks_less(
    made: tuple[Owed, Rate, int, int, int, int], one: Decimal, two: Decimal
) -> None:
    owed, _, total, fees, d_in, d_out = made
    low, high = sorted((one, two))
    figures = {"total_due": total, "fees": fees, "decimals_in": d_in, "decimals_out": d_out}
    at = {p: revalue(owed, Rate(p, Decimal(1)), **figures) for p in (low, high)}
    assert at[low].total_due >= at[high].total_due
    assert at[low].principal >= at[high].principal


@given(intents(), st.integers(min_value=1, max_value=10**8))
def test_the_quoted_lowest_price_is_exactly_where_the_total_stops_covering(
    made: tuple[Owed, Rate, int, int, int, int], below: int
) -> None:
    owed, _, total, fees, d_in, d_out = made
    exact = lowest_price(
        owed, Decimal(1), total_due=total, fees=fees, decimals_in=d_in, decimals_out=d_out
    )
    figures = {"total_due": total, "fees": fees, "decimals_in": d_in, "decimals_out": d_out}
    shown = Decimal(-((-exact.numerator * 10**8) // exact.denominator)).scaleb(-8)  # up to 1e-8
    assert not revalue(owed, Rate(shown, Decimal(1)), **figures).raised
    lower = Fraction(exact) * (1 - Fraction(1, 10**8 + below))
    assume(lower > 0)
    assert revalue(owed, _rate_at(lower), **figures).raised


def _rate_at(price: Fraction) -> Rate:
    """A Rate whose tokenIn price is ``price`` (exact: as numerator over denominator of a
    USD amount that is 1)."""
    return Rate(Decimal(price.numerator), Decimal(price.denominator))


def test_a_ten_percent_drop_with_one_percent_slippage_raises_the_total_by_the_difference() -> None:
    """30 USD of ETH quoted at 3,000 USD (0.01 ETH, plus 0.0001 ETH of fees), paid after
    ETH fell to 2,700: the 30 USD are 0.011111… ETH now."""
    owed = Owed(Decimal(30), "USD", Decimal("0.01"))
    eth = 10**18
    total, fees = eth // 100 + eth // 10_000, eth // 10_000
    found = revalue(
        owed, Rate(Decimal(2700), Decimal(1)), total_due=total, fees=fees, decimals_in=18,
        decimals_out=18,
    )  # fmt: skip
    assert found.principal == 11_111_111_111_111_112  # rounded up
    assert found.raised and found.total_due == found.principal + fees
    assert found.total_due - total == 1_111_111_111_111_112  # the payer tops this up


def test_a_half_percent_drop_with_one_percent_slippage_is_borne_by_the_relayer() -> None:
    owed = Owed(Decimal(30), "USD", Decimal("0.01"))
    eth = 10**18
    total, fees = eth // 100 + eth // 10_000, eth // 10_000
    found = revalue(
        owed, Rate(Decimal("2985"), Decimal(1)), total_due=total, fees=fees, decimals_in=18,
        decimals_out=18,
    )  # fmt: skip
    assert not found.raised and found.total_due == total
    assert found.principal == 10_050_251_256_281_408  # 30 / 2985, rounded up
    assert found.relayer_bears == found.principal - eth // 100 == 50_251_256_281_408
    assert found.tolerance == 100_502_512_562_814
    assert found.amount_out == found.principal


@pytest.mark.parametrize(
    ("price", "lowest"),
    [(Decimal(3000), Fraction(30 * 10**18, 10_101_010_101_010_101))],
)
def test_the_lowest_price_of_a_quote(price: Decimal, lowest: Fraction) -> None:
    """30 USD at 3,000 with 1 % slippage holds down to 2,970.000…03 USD: the largest
    principal 0.01 ETH of principal pays is x - floor(x / 100) <= 10^16."""
    owed = Owed(Decimal(30), "USD", Decimal("0.01"))
    principal = principal_at(owed, Rate(price, Decimal(1)), 18, 18)
    found = lowest_price(
        owed, Decimal(1), total_due=principal + 7, fees=7, decimals_in=18, decimals_out=18
    )
    assert found == lowest
    assert 2970 < found < Fraction(29701, 10)


def test_nonsense_is_refused() -> None:
    with pytest.raises(ValueError, match="slippage"):
        Owed(Decimal(1), "USD", Decimal(1))
    with pytest.raises(ValueError, match="positive"):
        Rate(Decimal(0), Decimal(1))
    with pytest.raises(ValueError, match="total due"):
        revalue(
            Owed(Decimal(1), "USD", Decimal(0)), Rate(Decimal(1), Decimal(1)), total_due=5,
            fees=5, decimals_in=6, decimals_out=6,
        )  # fmt: skip


@given(intents(), PRICES, st.integers(min_value=1, max_value=10**8))
def test_the_quoted_highest_price_of_the_owed_symbol_is_where_the_total_stops_covering(
    made: tuple[Owed, Rate, int, int, int, int], token_in: Decimal, above: int
) -> None:
    """A stablecoin (or any tokenIn at a fixed price) paying an amount in a priced symbol."""
    owed, _, total, fees, d_in, d_out = made
    figures = {"total_due": total, "fees": fees, "decimals_in": d_in, "decimals_out": d_out}
    exact = highest_price(owed, token_in, **figures)
    shown = Decimal(exact.numerator * 10**8 // exact.denominator).scaleb(-8)  # down to 1e-8
    assume(shown > 0)
    assert not revalue(owed, Rate(token_in, shown), **figures).raised
    higher = Fraction(exact) * (1 + Fraction(1, 10**8 + above))
    rate = Rate(Decimal(token_in) * higher.denominator, Decimal(higher.numerator))
    assert revalue(owed, rate, **figures).raised
