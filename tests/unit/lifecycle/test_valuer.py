"""The prices a revalued intent's payment is valued at (``lifecycle.valuation.Valuer``):
the rules of quoting, read from the role's price source; none when one cannot be trusted."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from tests.unit.lifecycle.lifecycle_builders import SOURCE, USDC, intent_row, settings

from intentd.contract.record import IntentRow
from intentd.domain.valuation import PriceUsed, Rate
from intentd.lifecycle.valuation import Valuer
from intentd.pricing import Price, PriceUnavailable
from intentd.settings import NATIVE_TOKEN


class Source:
    """A price source answering from a table; a symbol mapped to None is refused."""

    def __init__(self, **usd: str | None) -> None:
        self.usd = usd

    def usd_price(self, symbol: str, network: str) -> Price | None:
        if symbol not in self.usd:
            return None
        found = self.usd[symbol]
        if found is None:
            raise PriceUnavailable(symbol, f"no trusted USD price for {symbol}: stale")
        return Price(Decimal(found), "chainlink", f"{SOURCE}:0xfeed", 42)


def eth_row(symbol: str = "USD") -> IntentRow:
    return replace(
        intent_row(1), token_in=NATIVE_TOKEN.lower(), asset_token_symbol="ETH",
        asset_token_decimals=18, token_out_decimals=18, owed_amount=Decimal(30),
        owed_symbol=symbol, slippage=Decimal("0.01"),
    )  # fmt: skip


def test_an_eth_intent_owed_in_usd_is_valued_at_eths_price() -> None:
    found = Valuer(settings(), Source(ETH="2700.5")).rate(eth_row())
    assert found == Rate(
        Decimal("2700.5"),
        Decimal(1),
        (PriceUsed("ETH", Decimal("2700.5"), "chainlink", f"{SOURCE}:0xfeed", 42),),
    )


def test_an_amount_in_another_priced_symbol_is_valued_at_both_prices() -> None:
    found = Valuer(settings(), Source(ETH="2700", BTC="60000")).rate(eth_row("BTC"))
    assert found is not None
    assert (found.token_in, found.denomination) == (Decimal(2700), Decimal(60000))
    assert [p.symbol for p in found.used] == ["ETH", "BTC"]


@pytest.mark.parametrize(
    "source", [Source(ETH=None), Source(), Source(ETH="2700", BTC=None)], ids=str
)
def test_no_trusted_price_gives_no_rate(source: Source) -> None:
    row = eth_row("BTC" if "BTC" in source.usd else "USD")
    assert Valuer(settings(), source).rate(row) is None


def test_a_stablecoin_off_its_peg_gives_no_rate() -> None:
    row = replace(
        intent_row(1), token_in=USDC, owed_amount=Decimal("0.01"), owed_symbol="ETH",
        slippage=Decimal("0.01"),
    )  # fmt: skip
    assert Valuer(settings(), Source(USDC="0.97", ETH="3000")).rate(row) is None
    found = Valuer(settings(), Source(USDC="0.999", ETH="3000")).rate(row)
    assert found is not None and (found.token_in, found.denomination) == (1, 3000)


def test_an_intent_not_revalued_needs_no_rate() -> None:
    assert Valuer(settings(), Source(ETH="3000")).rate(intent_row(1)) is None
