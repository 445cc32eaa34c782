"""Quotes and creates against the relayer's float, over HTTP (docs/api.md,
``insufficient_liquidity``): the API reads ``relayer_float`` from PostgreSQL (never
RPC), leaves out of quote lists the routes it cannot cover, refuses such a create with a
409 before writing anything, and refuses with a 503 when the float is missing or old.

The rows are written here as the destination's executor writes them
(``execution.float_report``); each test serves its own API (its holds are its own).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve
from tests.integration.api.test_api_http import assert_problem, intent_body

from intentd.adapters.postgres import Pool
from intentd.settings import Settings

pytestmark = pytest.mark.integration
DESTINATION = "ARBITRUM_TESTNET"
USDC = 10**6


@pytest.fixture
async def float_api(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
    fresh_addresses: None,
) -> AsyncIterator[Api]:
    liquidity = {"admission": True, "overcommit_bps": 10_000, "view_refresh": 0.1}
    settings = make_settings(**api_sections(infra, liquidity=liquidity))
    async for url in serve(settings, pool):
        yield Api(url, settings, http)


def usdc_out(api: Api) -> str:
    found = api.settings.chains[DESTINATION].token_by_symbol("USDC")
    assert found is not None
    return found[0].lower()


async def store_float(
    pool: Pool, api: Api, balance: int, *, pending: int = 0, age: float = 0.0
) -> None:
    """The destination's relayer row, as its executor stores it (``age`` seconds old)."""
    await pool.execute(
        """
        INSERT INTO relayer_float (chain, holder, token, address, balance, block_number,
                                   reserved, owed, owed_overdue, pending, as_of)
        VALUES ($1, 'relayer', $2, $3, $4, 1, 0, 0, 0, $5, now() - make_interval(secs => $6))
        ON CONFLICT (chain, holder, token) DO UPDATE
           SET balance = EXCLUDED.balance, pending = EXCLUDED.pending, as_of = EXCLUDED.as_of
        """,
        DESTINATION,
        usdc_out(api),
        api.settings.chains[DESTINATION].relayer.lower(),
        balance,
        pending,
        age,
    )


async def seen(check: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    """Until the API's view (reloaded every 0.1 s) answers as ``check`` wants."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "the API's view did not follow the stored float"
        await asyncio.sleep(0.05)


def single(api: Api, amount: str) -> dict[str, Any]:
    return {
        "sourceChain": "BASE_TESTNET",
        "tokenIn": intent_body(api)["tokenIn"],
        "destinationChain": DESTINATION,
        "amount": amount,
        "amountSymbol": "USDC",
    }


async def test_a_create_beyond_what_the_relayer_can_cover_is_a_409_and_writes_nothing(
    float_api: Api, test_key: str, pool: Pool
) -> None:
    api = float_api
    await store_float(pool, api, 100 * USDC)

    async def admitted() -> bool:
        status, _, _ = await api.call(
            "GET", "/quotes/single-source", test_key, params=single(api, "1")
        )
        return status == 200

    await seen(admitted)
    status, record, _ = await api.call(
        "POST", "/intents", test_key, body=intent_body(api, amount="60")
    )
    assert status == 201, record
    before = await pool.fetchval("SELECT count(*) FROM intents")
    # 60 pending (held by this API until a reading counts it) + 50 > 100 free, at 1x
    status, data, response = await api.call(
        "POST", "/intents", test_key, body=intent_body(api, amount="50")
    )
    assert_problem(status, data, response, 409, "insufficient_liquidity")
    assert data == {
        "type": "urn:intentd:problem:insufficient_liquidity",
        "title": "Conflict",
        "status": 409,
        "detail": f"the relayer cannot cover 50 USDC on {DESTINATION} now; try a smaller"
        " amount, another destination, or later",
        "code": "insufficient_liquidity",
        "field": "amount",
        "instance": "/api/v1/intents",
    }
    assert "Retry-After" not in response.headers
    assert await pool.fetchval("SELECT count(*) FROM intents") == before
    status, record, _ = await api.call(
        "POST", "/intents", test_key, body=intent_body(api, amount="40")
    )
    assert status == 201, record  # 60 + 40 = 100: still within


async def test_quotes_leave_out_what_the_relayer_cannot_cover(
    float_api: Api, test_key: str, pool: Pool
) -> None:
    api = float_api
    await store_float(pool, api, 100 * USDC, pending=30 * USDC)
    multi = {"destinationChain": DESTINATION, "tokenOut": usdc_out(api), "amountSymbol": "USDC"}

    async def listed(amount: str) -> list[Any]:
        status, data, _ = await api.call(
            "GET", "/quotes/multi-source", test_key, params={**multi, "amount": amount}
        )
        assert status in (200, 503), data
        return list(data["quotes"]) if status == 200 else [None]

    async def loaded() -> bool:  # a view of an earlier row would list it
        return await listed("70.000001") == []

    await seen(loaded)
    assert len(await listed("70")) >= 1  # 100 free, 30 pending: 70 fits, no more
    status, data, response = await api.call(
        "GET", "/quotes/single-source", test_key, params=single(api, "71")
    )
    assert_problem(status, data, response, 409, "insufficient_liquidity")
    status, data, _ = await api.call(
        "GET", "/quotes/bridge-options", test_key, params=single(api, "71")
    )
    assert (status, data) == (200, {"quotes": []})
    status, data, _ = await api.call(
        "GET", "/quotes/bridge-options", test_key, params=single(api, "70")
    )
    assert status == 200 and len(data["quotes"]) >= 1


async def test_a_float_not_read_lately_is_a_503_with_retry_after(
    float_api: Api, test_key: str, pool: Pool
) -> None:
    api = float_api
    await store_float(pool, api, 10**6 * USDC, age=61.0)  # liquidity.max_age is 60 s

    async def refused() -> bool:
        status, _, _ = await api.call("POST", "/intents", test_key, body=intent_body(api))
        return status == 503

    await seen(refused)
    status, data, response = await api.call("POST", "/intents", test_key, body=intent_body(api))
    assert_problem(status, data, response, 503, "liquidity_unknown")
    assert response.headers["Retry-After"] == "5" and data["field"] == "destination_chain"
    assert f"the relayer's balance on {DESTINATION} is not known now (read 6" in data["detail"]
    status, data, response = await api.call(
        "GET", "/quotes/single-source", test_key, params=single(api, "1")
    )
    assert_problem(status, data, response, 503, "liquidity_unknown")
    await store_float(pool, api, 10**6 * USDC)  # the executor reads it again

    async def admitted() -> bool:
        status, _, _ = await api.call("POST", "/intents", test_key, body=intent_body(api))
        return status == 201

    await seen(admitted)


async def test_a_retried_create_answers_its_intent_whatever_the_float_says_now(
    float_api: Api, make_key: MakeKey, pool: Pool
) -> None:
    api = float_api
    key = await make_key("test")
    await store_float(pool, api, 100 * USDC)
    headers = {"Idempotency-Key": "order-liquidity-1"}

    async def created() -> Any:
        return await api.call("POST", "/intents", key, body=intent_body(api), headers=headers)

    async def admitted() -> bool:
        return (await created())[0] == 201

    await seen(admitted)
    _, first, _ = await created()
    await store_float(pool, api, 0)  # the relayer was drained since

    async def drained() -> bool:
        status, _, _ = await api.call("POST", "/intents", key, body=intent_body(api, amount="1"))
        return status == 409

    await seen(drained)
    status, again, _ = await created()
    assert (status, again["id"]) == (201, first["id"])
