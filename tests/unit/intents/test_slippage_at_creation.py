"""Slippage at creation (``intents.slippage``, ``intents.service.plan_intent``): which
intents are revalued, the slippage that applies, the create's own, its refusals, and what
a quote tells the payer."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest

from intentd.domain.valuation import Rate, revalue
from intentd.intents import quotes, routing
from intentd.intents.service import IntentRequest, IntentRequestError, plan_intent
from intentd.intents.slippage import slippage_limit
from intentd.pricing import StaticPrices
from intentd.settings import NATIVE_TOKEN, Settings

USDC_BASE = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
USDC_ARB = "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d"
DOGE_BASE = "0x" + "d" * 40
DOGE_ARB = "0x" + "9" * 40
RECIPIENT = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
CLIENT = UUID(int=7)
PRICES = StaticPrices({"ETH": Decimal(3000), "DOGE": Decimal("0.25")})


def _chain(chain_id: int, usdc: str, doge: str) -> dict[str, Any]:
    return {
        "chain_id": chain_id,
        "network": "test",
        "rpc_urls": ["http://a"],
        "relayer": RECIPIENT,
        "tokens": [
            {
                "address": usdc,
                "symbol": "USDC",
                "name": "USDC",
                "decimals": 6,
                "category": "stablecoin",
            },
            {
                "address": doge,
                "symbol": "DOGE",
                "name": "Doge",
                "decimals": 8,
                "category": "volatile",
                "min_sweep": "1",
            },
        ],
    }


def settings(**pricing: Any) -> Settings:
    return Settings.model_validate(
        {
            "database": {"url": "postgresql://x/y"},
            "kafka": {"bootstrap_servers": "k:1"},
            "fees": {"app_fee_bps": "100"},
            "pricing": pricing,
            "chains": {
                "BASE_TESTNET": _chain(84532, USDC_BASE, DOGE_BASE),
                "ARBITRUM_TESTNET": _chain(421614, USDC_ARB, DOGE_ARB),
            },
        }
    )


SETTINGS = settings()


def request(**changes: Any) -> IntentRequest:
    base: dict[str, Any] = {
        "amount": "30",
        "amount_symbol": "USD",
        "token_in": NATIVE_TOKEN,
        "source_chain": "BASE_TESTNET",
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": RECIPIENT,
        "refund_address": RECIPIENT,
    }
    base.update(changes)
    return IntentRequest(**base)


def plan(**changes: Any) -> Any:
    return plan_intent(SETTINGS, request(**changes), client_id=CLIENT, now=NOW, prices=PRICES)


def test_an_amount_in_usd_paid_in_eth_owes_the_usd_with_the_major_slippage() -> None:
    new = plan()
    assert (new.owed_amount, new.owed_symbol, new.slippage) == (
        Decimal(30),
        "USD",
        Decimal("0.01"),
    )
    assert new.prices == [
        {"symbol": "ETH", "usd": "3000", "source": "static", "feed": None, "round_id": None,
         "updated_at": None, "feed_usd": None},
    ]  # fmt: skip
    assert new.total_due == 10**16 + 10**14 and new.amount_out == 10**16


@pytest.mark.parametrize(
    ("changes", "symbol", "slippage"),
    [
        ({"amount_symbol": "USDC"}, "USD", "0.01"),
        ({"token_in": DOGE_BASE}, "USD", "0.03"),  # volatile
        ({"token_in": USDC_BASE, "amount_symbol": "ETH", "amount": "0.01"}, "ETH", "0.01"),
        ({"slippage": "0.005"}, "USD", "0.005"),
        ({"slippage": "0"}, "USD", "0"),
        ({"slippage": "0.1"}, "USD", "0.1"),  # pricing.slippage.max
    ],
)
def test_the_slippage_that_applies(changes: dict[str, Any], symbol: str, slippage: str) -> None:
    new = plan(**changes)
    assert (new.owed_symbol, new.slippage) == (symbol, Decimal(slippage))


@pytest.mark.parametrize(
    "changes",
    [
        {"amount_symbol": None, "amount": "0.01"},  # ETH, tokenIn's own units
        {"amount_symbol": "ETH", "amount": "0.01"},
        {"token_in": USDC_BASE},  # USD paid in a stablecoin: 1 USD on both sides
    ],
)
def test_an_amount_no_price_move_can_change_is_not_revalued(changes: dict[str, Any]) -> None:
    new = plan(**changes)
    assert (new.owed_amount, new.owed_symbol, new.slippage) == (None, None, Decimal(0))
    with pytest.raises(IntentRequestError) as refused:
        plan(**changes, slippage="0.01")
    assert (refused.value.code, refused.value.field) == ("slippage_not_applicable", "slippage")


@pytest.mark.parametrize(
    ("slippage", "code"),
    [
        ("1%", "slippage_malformed"),
        ("", "slippage_malformed"),
        ("1e-2", "slippage_malformed"),
        ("-0.01", "slippage_negative"),
        ("0.00001", "slippage_too_precise"),
        ("0.1001", "slippage_too_large"),
        ("2", "slippage_too_large"),
    ],
)
def test_a_bad_slippage_is_refused_with_its_code(slippage: str, code: str) -> None:
    with pytest.raises(IntentRequestError) as refused:
        plan(slippage=slippage)
    assert (refused.value.code, refused.value.field) == (code, "slippage")


def test_the_defaults_come_from_the_config() -> None:
    config = settings(slippage={"major": 250, "max": 300})
    new = plan_intent(config, request(), client_id=CLIENT, now=NOW, prices=PRICES)
    assert new.slippage == Decimal("0.025")
    with pytest.raises(ValueError, match=r"pricing.slippage.volatile \(300\)"):
        settings(slippage={"max": 200})


def test_a_quote_says_where_a_payment_of_its_total_stops_covering() -> None:
    path = routing.route(SETTINGS, "BASE_TESTNET", NATIVE_TOKEN, "ARBITRUM_TESTNET", None)
    quote = quotes.quote(SETTINGS, PRICES, path, "30", "USD")
    limit = slippage_limit(quote)
    assert limit is not None and (limit.symbol, limit.below) == ("ETH", True)
    assert Decimal("2970") < limit.usd < Decimal("2970.1")
    assert quote.owed is not None
    figures = {"total_due": quote.fees.total, "fees": quote.fees.app_fee, "decimals_in": 18,
               "decimals_out": 18}  # fmt: skip
    assert not revalue(quote.owed, Rate(limit.usd, Decimal(1)), **figures).raised
    assert revalue(
        quote.owed, Rate(limit.usd - Decimal("0.00000001"), Decimal(1)), **figures
    ).raised


def test_a_stablecoin_paying_an_amount_in_eth_is_limited_by_eth_rising() -> None:
    path = routing.route(SETTINGS, "BASE_TESTNET", USDC_BASE, "ARBITRUM_TESTNET", None)
    quote = quotes.quote(SETTINGS, PRICES, path, "0.01", "ETH")
    limit = slippage_limit(quote)
    assert limit is not None and (limit.symbol, limit.below) == ("ETH", False)
    assert Decimal("3030") < limit.usd < Decimal("3031")


def test_nothing_revalued_has_no_limit() -> None:
    path = routing.route(SETTINGS, "BASE_TESTNET", USDC_BASE, "ARBITRUM_TESTNET", None)
    assert slippage_limit(quotes.quote(SETTINGS, PRICES, path, "30", "USD")) is None
