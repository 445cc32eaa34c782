"""Quotes and intent plans priced by feeds: a depegged stablecoin at either end of a route
is refused, an untrusted price refuses the quote, and a quote carries the prices it used
and how long it holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest
from tests.unit.pricing.pricing_fakes import (
    ETH_BASE,
    NOW,
    UP_LONG_AGO,
    USDC_ARB,
    USDC_BASE,
    USDT_BASE,
    USDT_FEED,
    Clock,
    healthy,
    reading,
    round_,
    settings,
    usd,
)

from intentd.intents import quotes, routing
from intentd.intents.service import IntentRequest, IntentRequestError, plan_intent
from intentd.pricing.cache import FeedPrices
from intentd.pricing.rounds import ChainReading
from intentd.settings import NATIVE_TOKEN

PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
SETTINGS = settings(fees={"bridges": [{"name": "relay", "fixed_usd": "0.10", "bps": "5"}]})


def prices(readings: dict[str, ChainReading]) -> FeedPrices:
    source = FeedPrices(SETTINGS, clock=Clock())
    for chain, found in readings.items():
        source.record(chain, found)
    return source


def quote(source: FeedPrices, token_in: str, token_out: str, **changes: Any) -> quotes.Quote:
    path = routing.route(SETTINGS, "BASE", token_in, "ARBITRUM", token_out)
    return quotes.quote(SETTINGS, source, path, changes.pop("amount", "100"), None, **changes)


def plan(source: FeedPrices, token_in: str, token_out: str) -> None:
    request = IntentRequest(
        amount="100",
        token_in=token_in,
        source_chain="BASE",
        destination_chain="ARBITRUM",
        recipient=PAYEE,
        refund_address=PAYEE,
        token_out=token_out,
    )
    plan_intent(
        SETTINGS,
        request,
        client_id=UUID(int=1),
        now=datetime.fromtimestamp(NOW, UTC),
        prices=source,
    )


def test_a_depegged_usdt_is_not_paid_for_usdc() -> None:
    # Before: any two stablecoins were 1:1 forever; 100 USDT worth 95 USD bought 100 USDC.
    source = prices(healthy(usdt="0.95"))
    with pytest.raises(IntentRequestError) as raised:
        quote(source, USDT_BASE, USDC_ARB)
    assert (raised.value.code, raised.value.field) == ("token_depegged", "tokenIn")
    assert f"USDT is worth 0.95000000 USD by its feed (BASE:{USDT_FEED}, round 7)" in str(
        raised.value
    )
    with pytest.raises(IntentRequestError, match="USDT is worth") as created:
        plan(source, USDT_BASE, USDC_ARB)
    assert created.value.code == "token_depegged"


def test_a_depegged_coin_is_not_paid_out_either() -> None:
    source = prices(healthy(usdc="1.02"))
    path = routing.route(SETTINGS, "BASE", USDT_BASE, "BASE", USDC_BASE)
    with pytest.raises(IntentRequestError) as raised:
        quotes.quote(SETTINGS, source, path, "100", None)
    assert (raised.value.code, raised.value.field) == ("token_depegged", "tokenOut")


def test_a_stablecoin_within_its_peg_is_quoted_at_one_usd_naming_its_feed() -> None:
    found = quote(prices(healthy(usdt="0.997")), USDT_BASE, USDC_ARB)
    assert found.amount_out == 100_000_000
    [(symbol, price)] = found.prices
    assert (symbol, price.usd, price.observed, price.feed) == (
        "USDT",
        Decimal(1),
        Decimal("0.99700000"),
        f"BASE:{USDT_FEED}",
    )


def test_an_eth_quote_uses_the_feed_price_and_says_so() -> None:
    readings = healthy(eth="2500")
    found = quote(prices(readings), NATIVE_TOKEN, NATIVE_TOKEN, amount="1")
    assert found.fees.route_fee == 10**18 * 5 // 10_000 + 10**17 // 2500  # 0.10 USD at 2500
    [(symbol, price)] = found.prices
    assert (symbol, price.usd, price.source, price.feed, price.round_id) == (
        "ETH",
        Decimal(2500),
        "chainlink",
        f"BASE:{ETH_BASE}",
        7,
    )
    now = datetime.fromtimestamp(NOW, UTC)
    assert found.valid_until(now, 60) == now + timedelta(seconds=60)
    # the round is 10 s old and its heartbeat 1320 s: it would be refused in 1310 s
    assert found.valid_until(now, 3600) == now + timedelta(seconds=1310)


def test_a_stale_eth_price_refuses_the_quote_and_the_create() -> None:
    readings = healthy()
    readings["BASE"] = reading(
        {ETH_BASE: round_(usd("3000"), updated=NOW - 5000)}, sequencer=UP_LONG_AGO
    )
    with pytest.raises(IntentRequestError) as raised:
        quote(prices(readings), NATIVE_TOKEN, NATIVE_TOKEN, amount="1")
    assert (raised.value.code, raised.value.field) == ("price_unavailable", "tokenIn")
    assert "stale: round 7 was updated 5000 s ago" in str(raised.value)
    with pytest.raises(IntentRequestError, match="stale"):
        plan(prices(readings), NATIVE_TOKEN, NATIVE_TOKEN)


def test_an_amount_in_a_refused_symbol_is_refused_naming_amount_symbol() -> None:
    readings = healthy()
    readings["ARBITRUM"] = reading({}, sequencer=UP_LONG_AGO)  # ETH's second feed unread
    path = routing.route(SETTINGS, "BASE", USDC_BASE, "ARBITRUM", USDC_ARB)
    with pytest.raises(IntentRequestError) as raised:
        quotes.quote(SETTINGS, prices(readings), path, "0.1", "ETH")
    assert (raised.value.code, raised.value.field) == ("price_unavailable", "amountSymbol")


def test_without_readings_a_fed_symbol_is_refused_not_priced_by_the_table() -> None:
    with pytest.raises(IntentRequestError, match="not read yet") as raised:
        plan(FeedPrices(SETTINGS), NATIVE_TOKEN, NATIVE_TOKEN)  # the default source too
    assert raised.value.code == "price_unavailable"


def test_multi_source_leaves_out_what_it_cannot_price() -> None:
    found = quotes.multi_source(SETTINGS, prices(healthy(usdt="0.9")), "ARBITRUM", USDC_ARB, "10")
    sources = {(q.route.source.name, q.route.token_in.symbol) for q in found}
    assert ("BASE", "USDT") not in sources
    assert ("BASE", "USDC") in sources
