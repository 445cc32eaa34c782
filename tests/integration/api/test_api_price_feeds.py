"""Quotes and creates follow the on-chain feeds: the API (its background refresher reading
the mock feeds of an anvil of this module) quotes at the feed's price, follows it when it
moves, refuses with 503 ``price_unavailable`` when the feed is stale, out of bounds or the
sequencer down or in its grace, and refuses a depegged stablecoin (``token_depegged``).
Each test waits for what it expects by polling, bounded by a deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from typing import Any, TypeVar

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey, serve
from web3 import Web3

from intentd.adapters.postgres import Pool
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devinfra import feeds
from intentd_dev.devinfra.accounts import Role, dev_account
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil
from intentd_dev.devinfra.chains import provision_tokens
from intentd_dev.devinfra.contracts import aggregator_artifact, connect, token_artifact

pytestmark = pytest.mark.integration

CHAIN = "PRICED_TESTNET"
CHAIN_ID = 777_022
ETH = feeds.feed_address("ETH")
PAYEE = dev_account(Role.PAYER).address
_T = TypeVar("_T")


def bounded(address: str, low: str, high: str, heartbeat: int = 1320) -> dict[str, Any]:
    return {"address": address, "heartbeat": heartbeat, "min": low, "max": high}


@pytest.fixture(scope="module")
async def chain() -> AsyncIterator[tuple[AnvilProcess, dict[str, str]]]:
    instance = await asyncio.to_thread(start_anvil, CHAIN_ID)  # automine: moves are instant

    def provision(w3: Web3) -> dict[str, str]:
        feeds.ensure_feeds(w3, aggregator_artifact())
        return dict(provision_tokens(w3, token_artifact()))

    try:
        tokens = await on(instance, provision)
        yield instance, tokens
    finally:
        await asyncio.to_thread(instance.stop)


async def on(chain: AnvilProcess, step: Callable[[Web3], _T]) -> _T:
    def run() -> _T:
        with connect(chain.url) as w3:
            return step(w3)

    return await asyncio.to_thread(run)


@pytest.fixture(scope="module")
async def priced_api(
    chain: tuple[AnvilProcess, dict[str, str]],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
    fresh_addresses: None,
) -> AsyncIterator[Api]:
    anvil, tokens = chain
    relayer = dev_account(Role.RELAYER).address
    section = {
        "chain_id": CHAIN_ID,
        "network": "test",
        "l1_fee": "none",
        "rpc_urls": [anvil.url],
        "relayer": relayer,
        "sequencer_uptime_feed": feeds.SEQUENCER_FEED,
        "native": {"price_feed": bounded(ETH, "100", "100000")},
        "tokens": [
            {
                "address": tokens[symbol],
                "symbol": symbol,
                "name": symbol,
                "decimals": 6,
                "category": "stablecoin",
                "price_feed": bounded(feeds.feed_address(symbol), "0.1", "10", 95040),
            }
            for symbol in ("USDC", "USDT")
        ],
    }
    settings = make_settings(
        chains={CHAIN: section},
        fees={"bridges": [{"name": "relay", "fixed_usd": "0.10", "bps": "5"}]},
        pricing={"refresh_interval": 0.2, "max_read_age": 10},
        api={"source_rate_limit": 100_000, "key_cache_ttl": 0.5},
    )
    async for url in serve(settings, pool):
        yield Api(url, settings, http)


@pytest.fixture
async def key(make_key: MakeKey) -> str:
    return await make_key("test")


@pytest.fixture(autouse=True)
async def healthy_feeds(chain: tuple[AnvilProcess, dict[str, str]]) -> None:
    """Every test starts from the dev stack's state: ETH 3000, stablecoins 1, live,
    the sequencer up since 1970."""

    def reset(w3: Web3) -> None:
        for feed in feeds.DEV_FEEDS:
            feeds.set_price(w3, feed.address, feed.usd)
            feeds.set_live(w3, feed.address, True)
        feeds.set_sequencer(w3, up=True, since=1)

    await on(chain[0], reset)


async def eth_quote(api: Api, key: str) -> tuple[int, Any]:
    params = {
        "sourceChain": CHAIN,
        "tokenIn": NATIVE_TOKEN,
        "destinationChain": CHAIN,
        "amount": "30",  # USD
    }
    status, body, _ = await api.call("GET", "/quotes/single-source", key, params=params)
    return status, body


async def create(api: Api, key: str, token_in: str, token_out: str | None = None) -> Any:
    body = {
        "amount": "1",
        "tokenIn": token_in,
        "source_chain": CHAIN,
        "destination_chain": CHAIN,
        "recipient": PAYEE,
        "refund_address": PAYEE,
    }
    if token_out is not None:
        body["tokenOut"] = token_out
    status, answer, response = await api.call("POST", "/intents", key, body=body)
    return status, answer, response


async def until(check: Callable[[], Awaitable[_T | None]], seconds: float = 30) -> _T:
    """Poll ``check`` until it returns something, at most ``seconds``."""
    async with asyncio.timeout(seconds):
        while True:
            found = await check()
            if found is not None:
                return found
            await asyncio.sleep(0.1)


async def quoted_at(api: Api, key: str, usd: str) -> Any:
    async def check() -> Any:
        status, body = await eth_quote(api, key)
        if status == 200 and body["prices"][0]["usd"] == usd:
            return body
        return None

    return await until(check)


async def refused(api: Api, key: str, reason: str) -> Any:
    async def check() -> Any:
        status, body = await eth_quote(api, key)
        return body if status == 503 and reason in body.get("detail", "") else None

    body = await until(check)
    assert body["code"] == "price_unavailable"
    status, problem, response = await create(api, key, NATIVE_TOKEN)
    assert (status, problem["code"]) == (503, "price_unavailable")
    assert reason in problem["detail"]
    assert response.headers["Retry-After"]
    return body


async def test_quotes_follow_the_feed_and_say_which_round_they_used(
    priced_api: Api, key: str, chain: tuple[AnvilProcess, dict[str, str]]
) -> None:
    body = await quoted_at(priced_api, key, "3000")
    [price] = body["prices"]
    assert (price["symbol"], price["source"], price["feed"]) == (
        "ETH",
        "chainlink",
        f"{CHAIN}:{ETH}",
    )
    assert body["initialAmount"] == "0.01"  # 30 USD at 3000
    assert body["valid_until"] > body["prices"][0]["updated_at"]
    await on(chain[0], lambda w3: feeds.set_price(w3, ETH, Decimal(2500)))
    moved = await quoted_at(priced_api, key, "2500")
    assert moved["initialAmount"] == "0.012"  # 30 USD at 2500
    assert int(moved["prices"][0]["round_id"]) > int(price["round_id"])
    status, record, _ = await create(priced_api, key, NATIVE_TOKEN)
    assert status == 201, record


async def test_a_stale_feed_refuses_quotes_and_creates(
    priced_api: Api, key: str, chain: tuple[AnvilProcess, dict[str, str]]
) -> None:
    await quoted_at(priced_api, key, "3000")
    then = int(time.time()) - 7200

    def stale(w3: Web3) -> None:
        round_id = feeds.latest_round(w3, ETH)[0]
        feeds.set_round(
            w3,
            ETH,
            round_id=round_id,
            answer=3000 * 10**8,
            started_at=then,
            updated_at=then,
            answered_in_round=round_id,
        )

    await on(chain[0], stale)
    await refused(priced_api, key, "stale: round")
    await on(chain[0], lambda w3: feeds.set_live(w3, ETH, True))
    await quoted_at(priced_api, key, "3000")


async def test_an_answer_out_of_bounds_refuses_quotes_and_creates(
    priced_api: Api, key: str, chain: tuple[AnvilProcess, dict[str, str]]
) -> None:
    await on(chain[0], lambda w3: feeds.set_price(w3, ETH, Decimal(5)))
    await refused(priced_api, key, "outside the feed's bounds [100, 100000]")


async def test_a_sequencer_down_or_just_back_refuses_quotes_and_creates(
    priced_api: Api, key: str, chain: tuple[AnvilProcess, dict[str, str]]
) -> None:
    await quoted_at(priced_api, key, "3000")
    now = int(time.time())
    await on(chain[0], lambda w3: feeds.set_sequencer(w3, up=False, since=now))
    await refused(priced_api, key, "the sequencer is down")
    await on(chain[0], lambda w3: feeds.set_sequencer(w3, up=True, since=int(time.time())))
    await refused(priced_api, key, "within its grace of 3600 s")
    await on(chain[0], lambda w3: feeds.set_sequencer(w3, up=True, since=1))
    await quoted_at(priced_api, key, "3000")


async def test_a_depegged_stablecoin_is_refused_both_ways(
    priced_api: Api, key: str, chain: tuple[AnvilProcess, dict[str, str]]
) -> None:
    tokens = chain[1]
    usdt, usdc = feeds.feed_address("USDT"), tokens["USDC"]
    status, record, _ = await create(priced_api, key, tokens["USDT"], usdc)
    assert status == 201, record
    await on(chain[0], lambda w3: feeds.set_price(w3, usdt, Decimal("0.95")))

    async def depegged() -> Any:
        status, problem, _ = await create(priced_api, key, tokens["USDT"], usdc)
        return problem if status == 422 else None

    problem = await until(depegged)
    assert (problem["code"], problem["field"]) == ("token_depegged", "tokenIn")
    assert "USDT is worth 0.95" in problem["detail"]
    status, problem, _ = await create(priced_api, key, usdc, tokens["USDT"])
    assert (status, problem["code"], problem["field"]) == (422, "token_depegged", "tokenOut")
    params = {
        "sourceChain": CHAIN,
        "tokenIn": tokens["USDT"],
        "destinationChain": CHAIN,
        "tokenOut": usdc,
        "amount": "10",
    }
    status, quote, _ = await priced_api.call("GET", "/quotes/single-source", key, params=params)
    assert (status, quote["code"]) == (422, "token_depegged")


async def test_quotes_say_the_slippage_and_what_it_means_and_creates_record_it(
    priced_api: Api, key: str, chain: tuple[AnvilProcess, dict[str, str]]
) -> None:
    """30 USD paid in ETH is revalued at its payment (docs/pricing.md, Slippage): the quote
    says the slippage and the ETH price below which its total stops covering; the intent
    records its slippage, what it owes and the prices it was created at."""
    body = await quoted_at(priced_api, key, "3000")
    assert body["slippage"] == "0.01"  # pricing.slippage.major
    limit = body["slippage_limit"]
    assert (limit["symbol"], limit["direction"]) == ("ETH", "below")
    assert Decimal("2969") < Decimal(limit["usd"]) < Decimal("3000")
    params = {"sourceChain": CHAIN, "tokenIn": chain[1]["USDC"], "destinationChain": CHAIN,
              "amount": "30"}  # fmt: skip
    status, usdc, _ = await priced_api.call("GET", "/quotes/single-source", key, params=params)
    assert (status, usdc["slippage"], usdc["slippage_limit"]) == (200, "0", None)

    request = {"amount": "30", "amountSymbol": "USD", "tokenIn": NATIVE_TOKEN,
               "source_chain": CHAIN, "destination_chain": CHAIN, "recipient": PAYEE,
               "refund_address": PAYEE}  # fmt: skip
    status, record, _ = await priced_api.call(
        "POST", "/intents", key, body={**request, "slippage": "0.02"}
    )
    assert status == 201, record
    assert (record["slippage"], record["valuation"]) == ("0.02", None)
    assert [(p["symbol"], p["usd"], p["source"]) for p in record["prices"]] == [
        ("ETH", "3000", "chainlink")
    ]
    for slippage, code in (("2%", "slippage_malformed"), ("0.5", "slippage_too_large")):
        status, problem, _ = await priced_api.call(
            "POST", "/intents", key, body={**request, "slippage": slippage}
        )
        assert (status, problem["code"], problem["field"]) == (422, code, "slippage")
    in_eth = {**request, "amount": "0.01", "amountSymbol": "ETH", "slippage": "0.01"}
    status, problem, _ = await priced_api.call("POST", "/intents", key, body=in_eth)
    assert (status, problem["code"]) == (422, "slippage_not_applicable")
