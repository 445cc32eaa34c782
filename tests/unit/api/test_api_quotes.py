"""Quotes (pure): fee figures, denominations, source selection, and that an intent
created with a quote's inputs carries the quote's figures."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest

from intentd.intents import quotes, routing
from intentd.intents.service import IntentRequest, IntentRequestError, plan_intent
from intentd.pricing import StaticPrices
from intentd.settings import NATIVE_TOKEN, Settings

USDC_A = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
USDC_B = "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d"
USDT_B = "0x" + "7" * 40
USDC_MAIN = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
ETH_FEED = "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70"


def token(address: str, symbol: str, decimals: int = 6) -> dict[str, Any]:
    return {
        "address": address,
        "symbol": symbol,
        "name": symbol,
        "decimals": decimals,
        "category": "stablecoin",
    }


def chain(chain_id: int, network: str, *tokens: dict[str, Any]) -> dict[str, Any]:
    return {
        "chain_id": chain_id,
        "network": network,
        "rpc_urls": ["http://x"],
        "relayer": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
        "tokens": list(tokens),
    }


SETTINGS = Settings.model_validate(
    {
        "database": {"url": "postgresql://x/y"},
        "kafka": {"bootstrap_servers": "k:1"},
        "chains": {
            "A_TESTNET": chain(1001, "test", token(USDC_A, "USDC")),
            "B_TESTNET": chain(1002, "test", token(USDC_B, "USDC"), token(USDT_B, "USDT", 18)),
            "MAIN": {
                **chain(8453, "main", token(USDC_MAIN, "USDC")),
                # a main network is priced by feeds only (docs/pricing.md); never read here
                "native": {
                    "price_feed": {"address": ETH_FEED, "heartbeat": 60, "min": "1", "max": "1e6"}
                },
            },
        },
        "fees": {
            "app_fee_bps": "10",
            "bridges": [
                {"name": "relay", "fixed_usd": "0.10", "bps": "5"},
                {"name": "express", "fixed_usd": "0.50", "routes": ["A_TESTNET->B_TESTNET"]},
            ],
        },
        "prices": {"ETH": "3000"},
    }
)
PRICES = StaticPrices(SETTINGS.prices)


def usdc_quote(amount: str = "10", **changes: Any) -> quotes.Quote:
    path = routing.route(SETTINGS, "A_TESTNET", USDC_A, "B_TESTNET", None)
    return quotes.quote(SETTINGS, PRICES, path, amount, changes.pop("symbol", None), **changes)


def test_fees_of_a_stablecoin_route() -> None:
    quote = usdc_quote()
    assert quote.bridge.name == "relay"  # 0.105 USDC beats express's 0.50
    assert (quote.fees.amount, quote.fees.route_fee, quote.fees.app_fee) == (
        10_000_000,
        105_000,
        10_000,
    )
    assert quote.total_in_usd == Decimal("10.115")
    assert quote.amount_out == 10_000_000


def test_a_named_bridge_is_used_and_an_unknown_one_refused() -> None:
    assert usdc_quote(bridge="express").fees.route_fee == 500_000
    with pytest.raises(IntentRequestError) as raised:
        usdc_quote(bridge="teleport")
    assert raised.value.code == "unknown_bridge"


def test_usd_amount_in_eth_is_converted_at_the_price_rounded_up() -> None:
    path = routing.route(SETTINGS, "A_TESTNET", NATIVE_TOKEN, "B_TESTNET", None)
    quote = quotes.quote(SETTINGS, PRICES, path, "30", "USD")
    assert quote.fees.amount == 10**16  # 30 USD at 3000 USD/ETH
    assert quote.total_in_usd is not None and quote.total_in_usd > Decimal(30)


def test_intent_created_from_a_quote_carries_its_figures() -> None:
    quote = usdc_quote("12.5", symbol="USD")
    new = plan_intent(
        SETTINGS,
        IntentRequest(
            amount="12.5",
            amount_symbol="USD",
            token_in=USDC_A,
            source_chain="A_TESTNET",
            destination_chain="B_TESTNET",
            recipient=PAYEE,
            refund_address=PAYEE,
        ),
        client_id=UUID(int=1),
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert (
        new.total_due == quote.fees.total == new.fees_in_asset + new.app_fee_in_asset + 12_500_000
    )
    assert (new.fees_in_asset, new.app_fee_in_asset) == (quote.fees.route_fee, quote.fees.app_fee)
    assert (new.fees_in_usd, new.app_fee_in_usd, new.total_in_usd) == (
        quote.fees_in_usd,
        quote.app_fee_in_usd,
        quote.total_in_usd,
    )


def test_multi_source_lists_payable_tokens_of_the_network_class_cheapest_first() -> None:
    found = quotes.multi_source(SETTINGS, PRICES, "B_TESTNET", USDC_B, "10")
    sources = [(q.route.source.name, q.route.token_in.symbol) for q in found]
    assert ("MAIN", "USDC") not in sources  # another network class
    assert ("A_TESTNET", "ETH") not in sources  # ETH cannot become USDC
    assert {("A_TESTNET", "USDC"), ("B_TESTNET", "USDC"), ("B_TESTNET", "USDT")} == set(sources)
    totals = [q.total_in_usd for q in found]
    assert totals == sorted(t for t in totals if t is not None)


def test_multi_source_honours_exclusions_and_the_callers_networks() -> None:
    found = quotes.multi_source(SETTINGS, PRICES, "B_TESTNET", USDC_B, "10", exclude={"B_TESTNET"})
    assert {q.route.source.name for q in found} == {"A_TESTNET"}
    none = quotes.multi_source(
        SETTINGS, PRICES, "B_TESTNET", USDC_B, "10", source_allowed=lambda c: c.network == "main"
    )
    assert none == []


@pytest.mark.parametrize(
    ("args", "code", "field"),
    [
        (("NOPE", USDC_B, "10"), "unknown_chain", "destinationChain"),
        (("B_TESTNET", USDC_A, "10"), "unknown_token", "tokenOut"),
        (("B_TESTNET", "0x12", "10"), "invalid_address", "tokenOut"),
        (("B_TESTNET", USDC_B, "-1"), "amount_negative", "amount"),
        (("B_TESTNET", USDC_B, "0"), "amount_zero", "amount"),
        (("B_TESTNET", USDC_B, "ten"), "amount_malformed", "amount"),
        (("B_TESTNET", USDC_B, "1." + "0" * 18 + "1"), "amount_too_precise", "amount"),
    ],
)
def test_multi_source_errors(args: tuple[str, str, str], code: str, field: str) -> None:
    with pytest.raises(IntentRequestError) as raised:
        quotes.multi_source(SETTINGS, PRICES, *args)
    assert (raised.value.code, raised.value.field) == (code, field)


def test_routes_stay_within_a_network_class() -> None:
    with pytest.raises(IntentRequestError) as raised:
        routing.route(SETTINGS, "A_TESTNET", USDC_A, "MAIN", None)
    assert raised.value.code == "unsupported_route"


def test_fixed_fee_on_an_unpriced_token_is_price_unavailable() -> None:
    unpriced = StaticPrices({})
    path = routing.route(SETTINGS, "A_TESTNET", NATIVE_TOKEN, "B_TESTNET", None)
    with pytest.raises(IntentRequestError) as raised:
        quotes.quote(SETTINGS, unpriced, path, "1", None)
    assert raised.value.code == "price_unavailable"


def usdt_to_usdc(amount: str, symbol: str | None = None) -> quotes.Quote:
    """USDT of 18 decimals (B_TESTNET) to USDC of 6 (A_TESTNET): 10**12 units per unit."""
    path = routing.route(SETTINGS, "B_TESTNET", USDT_B, "A_TESTNET", USDC_A)
    return quotes.quote(SETTINGS, PRICES, path, amount, symbol)


@pytest.mark.parametrize(
    ("amount", "code"),
    [
        ("0.000000000001", "amount_rounds_to_zero"),  # 10**6 units of USDT: 0 of USDC
        ("0.0000009", "amount_rounds_to_zero"),
        ("1.0000000000001", "amount_too_precise_for_route"),  # the dust would be lost
        ("10.0000005", "amount_too_precise_for_route"),
    ],
)
def test_an_amount_tokenOut_cannot_carry_is_refused(amount: str, code: str) -> None:  # noqa: N802
    with pytest.raises(IntentRequestError) as raised:
        usdt_to_usdc(amount)
    assert (raised.value.code, raised.value.field) == (code, "amount")


def test_a_converted_amount_is_rounded_up_to_what_tokenOut_carries() -> None:  # noqa: N802
    quote = usdt_to_usdc("0." + "0" * 17 + "1", "ETH")  # 1 wei at 3000 USD: 3000 USDT units
    assert (quote.fees.amount, quote.amount_out) == (10**12, 1)
    quote = usdt_to_usdc("1.5")  # exact: 1.5 * 10**18 units, 1.5 * 10**6 out
    assert (quote.fees.amount, quote.amount_out) == (15 * 10**17, 1_500_000)
    assert quote.fees.amount == quote.amount_out * 10**12  # nothing left to the relayer


def test_a_route_that_scales_up_keeps_every_unit() -> None:
    path = routing.route(SETTINGS, "A_TESTNET", USDC_A, "B_TESTNET", USDT_B)
    quote = quotes.quote(SETTINGS, PRICES, path, "0.000001", None)
    assert (quote.fees.amount, quote.amount_out) == (1, 10**12)


@pytest.mark.parametrize(
    ("source", "token_in", "destination", "token_out", "amount", "symbol"),
    [
        # the largest USDC amount parse accepts: the fees push the total past 256 bits
        ("A_TESTNET", USDC_A, "B_TESTNET", USDC_B, str((2**256 - 1) // 10**6), None),
        # 6 to 18 decimals: the recipient's amount does not fit 256 bits
        ("A_TESTNET", USDC_A, "B_TESTNET", USDT_B, "1" + "0" * 70, None),
        # a USD amount converted to ETH at 3000 USD: more than 10**78 wei
        ("A_TESTNET", NATIVE_TOKEN, "B_TESTNET", NATIVE_TOKEN, "1" + "0" * 70, "USD"),
    ],
)
def test_an_amount_beyond_256_bits_is_refused(  # noqa: PLR0917 - parametrized
    source: str, token_in: str, destination: str, token_out: str, amount: str, symbol: str | None
) -> None:
    path = routing.route(SETTINGS, source, token_in, destination, token_out)
    with pytest.raises(IntentRequestError) as raised:
        quotes.quote(SETTINGS, PRICES, path, amount, symbol)
    assert (raised.value.code, raised.value.field) == ("amount_too_large", "amount")
