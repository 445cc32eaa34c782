"""Amounts a route cannot carry, over HTTP: refused with a precise 422, never a 500.

A route between tokens of different decimals must not round the recipient's amount
to 0 or leave dust to the relayer; an amount whose figures do not fit 256 bits (the
on-chain limit, and below PostgreSQL's ``NUMERIC(78,0)``) is refused before it is
stored. The main network ``BASE`` of these settings is never read, so a stablecoin of
18 decimals can be configured on it (beside USDC without a feed: ``assume_peg``), and
ETH is priced there by a fixed source instead of feeds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Any

import aiohttp
import pytest
from tests.integration.api.conftest import MAIN_USDC, Api, api_sections, serve
from tests.integration.api.test_api_http import assert_problem, intent_body

from intentd.adapters.postgres import Pool
from intentd.pricing import Price
from intentd.settings import NATIVE_TOKEN, Settings

pytestmark = pytest.mark.integration

DAI = "0x6B175474E89094C44Da98b954EedeAC495271d0F"
"""A stablecoin of 18 decimals on BASE: 10**12 of its units per unit of USDC."""


@pytest.fixture(scope="module")
async def decimals_api(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
    fresh_addresses: None,
) -> AsyncIterator[Api]:
    sections = api_sections(infra)
    dai = {"address": DAI, "symbol": "DAI", "name": "Dai", "decimals": 18}
    sections["chains"]["BASE"]["tokens"].append(
        {**dai, "category": "stablecoin", "assume_peg": True}
    )
    sections["chains"]["BASE"]["tokens"][0]["assume_peg"] = True
    settings = make_settings(**sections)
    async for url in serve(settings, pool, prices=EthAt3000()):
        yield Api(url, settings, http)


class EthAt3000:
    """ETH at 3000 USD on every network class, nothing else priced."""

    def usd_price(self, symbol: str, network: str) -> Price | None:
        return Price(Decimal(3000), "static") if symbol == "ETH" else None


def dai_to_usdc(amount: str, symbol: str = "DAI") -> dict[str, Any]:
    return {
        "sourceChain": "BASE",
        "tokenIn": DAI,
        "destinationChain": "BASE",
        "tokenOut": MAIN_USDC,
        "amount": amount,
        "amountSymbol": symbol,
    }


@pytest.mark.parametrize(
    ("amount", "code"),
    [
        ("0.000000000001", "amount_rounds_to_zero"),
        ("0.0000009", "amount_rounds_to_zero"),
        ("1.0000000000001", "amount_too_precise_for_route"),
    ],
)
async def test_an_amount_tokenOut_cannot_carry_is_422(  # noqa: N802
    decimals_api: Api, test_key: str, amount: str, code: str
) -> None:
    params = dai_to_usdc(amount)
    for path in ("/quotes/single-source", "/quotes/bridge-options"):
        status, data, response = await decimals_api.call("GET", path, test_key, params=params)
        assert_problem(status, data, response, 422, code)
        assert data["field"] == "amount"
    body = intent_body(
        decimals_api,
        amount=amount,
        amountSymbol="DAI",
        tokenIn=DAI,
        tokenOut=MAIN_USDC,
        source_chain="BASE",
        destination_chain="BASE",
    )
    status, data, response = await decimals_api.call("POST", "/intents", test_key, body=body)
    assert_problem(status, data, response, 422, code)


async def test_a_converted_amount_is_rounded_up_to_a_whole_unit_out(
    decimals_api: Api, test_key: str
) -> None:
    params = dai_to_usdc("0." + "0" * 17 + "1", symbol="ETH")  # 1 wei: 3000 DAI units
    status, quote, _ = await decimals_api.call(
        "GET", "/quotes/single-source", test_key, params=params
    )
    assert status == 200, quote
    assert quote["initialAmount"] == "0.000001"  # 10**12 units of DAI: one unit of USDC out
    assert quote["amount_out"] == "0.000001"


async def test_an_amount_beyond_256_bits_is_422_not_500(api: Api, test_key: str) -> None:
    huge = "1" + "0" * 70  # USD: more than 10**78 wei of ETH at 3000 USD
    params = {
        "sourceChain": "BASE_TESTNET",
        "tokenIn": NATIVE_TOKEN,
        "destinationChain": "ARBITRUM_TESTNET",
        "amount": huge,
        "amountSymbol": "USD",
    }
    status, data, response = await api.call("GET", "/quotes/single-source", test_key, params=params)
    assert_problem(status, data, response, 422, "amount_too_large")
    body = intent_body(api, amount=huge, amountSymbol="USD", tokenIn=NATIVE_TOKEN)
    status, data, response = await api.call("POST", "/intents", test_key, body=body)
    assert_problem(status, data, response, 422, "amount_too_large")
    assert data["field"] == "amount"
    status, data, response = await api.call(
        "GET",
        "/quotes/multi-source",
        test_key,
        params={"destinationChain": "ARBITRUM_TESTNET", "tokenOut": NATIVE_TOKEN, "amount": huge},
    )
    assert_problem(status, data, response, 422, "amount_too_large")


async def test_the_openapi_document_names_the_codes(api: Api) -> None:
    async with api.http.get(f"{api.url}/api/v1/openapi.json") as response:
        document = await response.json()
    for path, method in (("/api/v1/quotes/single-source", "get"), ("/api/v1/intents", "post")):
        described = document["paths"][path][method]["responses"]["422"]["description"]
        for code in ("amount_rounds_to_zero", "amount_too_precise_for_route", "amount_too_large"):
            assert code in described, (path, code)
