"""A client's cap of intents awaiting payment through the API (issue 18, item 3): a
create past it, by the client's key or by its session's payer, is a 409
``open_intent_limit`` problem; another client is not affected; a place frees when an
intent ends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from uuid import uuid4

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve
from tests.integration.api.test_api_trigger_sessions import PAYEE, new_session, usdc

from intentd.adapters.postgres import Pool, api_keys
from intentd.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
async def capped_api(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
) -> AsyncIterator[Api]:
    settings = make_settings(**api_sections(infra, intents={"max_open_per_client": 3}))
    async with aiohttp.ClientSession() as http:
        async for url in serve(settings, pool):
            yield Api(url, settings, http)


async def test_the_api_and_sessions_answer_409_open_intent_limit(
    capped_api: Api, make_key: MakeKey, pool: Pool
) -> None:
    api = capped_api
    client = f"client-{uuid4().hex[:8]}"
    key = await make_key("test", client=client, rate_limit=1000)
    other = await make_key("test", rate_limit=1000)
    body = {
        "amount": "1",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "source_chain": "BASE_TESTNET",
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": PAYEE,
        "refund_address": PAYEE,
    }
    for _ in range(2):
        status, record, _ = await api.call("POST", "/intents", key, body=body)
        assert status == 201, record
    token = (await new_session(api, key))["session_token"]
    choice = {"source_chain": "BASE_TESTNET", "tokenIn": body["tokenIn"], "refund_address": PAYEE}
    status, record, _ = await api.call("POST", "/session/intents", token, body=choice)
    assert status == 201, record  # a session's payer takes its merchant's third place

    status, problem, response = await api.call("POST", "/intents", key, body=body)
    assert (status, problem["code"]) == (409, "open_intent_limit"), problem
    assert response.headers["Content-Type"] == "application/problem+json"
    assert problem["type"] == "urn:intentd:problem:open_intent_limit"
    assert "cap of 3 intents awaiting payment" in problem["detail"] and "field" not in problem
    status, problem, _ = await api.call("POST", "/session/intents", token, body=choice)
    assert (status, problem["code"]) == (409, "open_intent_limit"), problem
    status, record, _ = await api.call("POST", "/intents", other, body=body)
    assert status == 201, record  # another client is not affected

    mine = await pool.fetchval(
        "SELECT min(id) FROM intents WHERE client_id = $1", api_keys.client_id_of(client)
    )
    await pool.execute("UPDATE intents SET status = 'CANCELLED' WHERE id = $1", mine)
    status, record, _ = await api.call("POST", "/intents", key, body=body)
    assert status == 201, record
