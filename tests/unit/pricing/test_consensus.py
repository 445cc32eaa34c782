"""Agreement of several feeds and the stablecoin's peg: exact boundaries and properties."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.pricing import Price, PriceSource, TokenDepegged, token_price
from intentd.pricing.consensus import agree, check_peg
from intentd.settings import TokenConfig

USDT = TokenConfig(
    address="0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9",
    symbol="USDT",
    name="Tether USD",
    decimals=6,
    category="stablecoin",
)


@pytest.mark.parametrize(
    ("answers", "agreed"),
    [
        ([("a", Decimal(3000))], True),
        ([("a", Decimal(3000)), ("b", Decimal(3030))], True),  # exactly 100 bps of 3000
        ([("a", Decimal(3030)), ("b", Decimal(3000))], True),
        ([("a", Decimal(3000)), ("b", Decimal("3030.01"))], False),
        ([("a", Decimal(3000)), ("b", Decimal(3010)), ("c", Decimal(3031))], False),
    ],
)
def test_feeds_agree_within_max_deviation_of_the_lowest(
    answers: list[tuple[str, Decimal]], agreed: bool
) -> None:
    assert (agree(answers, 100) is None) is agreed


def test_a_disagreement_names_the_feeds_furthest_apart() -> None:
    refusal = agree([("BASE:0xa", Decimal(3000)), ("ARB:0xb", Decimal(3300))], 100)
    assert refusal is not None
    assert "ARB:0xb says 3300 USD, BASE:0xa says 3000 USD, 1000 bps apart" in refusal.reason


prices = st.decimals(min_value=Decimal("0.00000001"), max_value=Decimal(10**9), places=8)


@given(st.lists(prices, min_size=1, max_size=4), st.integers(min_value=1, max_value=5000))
def test_agreement_does_not_depend_on_order_and_bounds_every_pair(
    values: list[Decimal], bps: int
) -> None:
    answers = [(str(i), v) for i, v in enumerate(values)]
    verdict = agree(answers, bps)
    assert (agree(list(reversed(answers)), bps) is None) == (verdict is None)
    if verdict is None:
        low = min(values)
        assert all((Fraction(v) - Fraction(low)) * 10_000 <= bps * Fraction(low) for v in values)


@pytest.mark.parametrize(
    ("usd", "pegged"),
    [
        ("1", True),
        ("0.995", True),  # exactly 50 bps below
        ("1.005", True),
        ("0.99499999", False),
        ("1.00500001", False),
        ("0.95", False),
    ],
)
def test_a_stablecoin_is_on_its_peg_within_the_tolerance(usd: str, pegged: bool) -> None:
    price = Price(Decimal(usd), "chainlink", "BASE:0xf", 9)
    if pegged:
        check_peg("USDT", price, 50)
    else:
        with pytest.raises(
            TokenDepegged, match=r"USDT is worth .* by its feed \(BASE:0xf, round 9\)"
        ):
            check_peg("USDT", price, 50)


class Fixed:
    def __init__(self, price: Price | None) -> None:
        self.price = price

    def usd_price(self, symbol: str, network: str) -> Price | None:
        return self.price


def test_a_stablecoin_is_one_usd_by_its_peg_with_or_without_a_feed() -> None:
    source: PriceSource = Fixed(None)
    assert token_price(USDT, "main", source, peg_tolerance_bps=50) == Price(Decimal(1), "peg")
    fed = Price(Decimal("0.9991"), "chainlink", "BASE:0xf", 9)
    found = token_price(USDT, "main", Fixed(fed), peg_tolerance_bps=50)
    assert found is not None
    assert (found.usd, found.observed, found.feed, found.round_id) == (
        Decimal(1),
        Decimal("0.9991"),
        "BASE:0xf",
        9,
    )
    with pytest.raises(TokenDepegged):
        token_price(USDT, "main", Fixed(Price(Decimal("0.95"), "chainlink")), peg_tolerance_bps=50)
