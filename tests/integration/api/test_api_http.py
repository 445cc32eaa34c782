"""Every endpoint and error code of the API, over HTTP, against the real store."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from pydantic import TypeAdapter
from tests.integration.api.conftest import MAIN_USDC, Api, MakeKey

from intentd.adapters.postgres import Pool, api_keys
from intentd.api.models import Problem, Quote, TokenRecord
from intentd.contract.record import IntentRecord
from intentd.credentials import hash_key
from intentd.settings import NATIVE_TOKEN

pytestmark = pytest.mark.integration

PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
PROBLEM = "application/problem+json"


def usdc(api: Api, chain: str = "BASE_TESTNET") -> str:
    return next(t.address for t in api.settings.chains[chain].tokens if t.symbol == "USDC")


def intent_body(api: Api, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "sender": PAYEE,
        "amount": "10",
        "amountSymbol": "USDC",
        "tokenIn": usdc(api),
        "source_chain": "BASE_TESTNET",
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": PAYEE,
        "refund_address": PAYEE,
        "metadata": {"order": "A-1"},
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def assert_problem(status: int, data: Any, response: Any, expected: int, code: str) -> None:
    assert (status, data.get("code")) == (expected, code), data
    assert response.headers["Content-Type"] == PROBLEM
    Problem.model_validate(data)
    assert data["type"] == f"urn:intentd:problem:{code}"


async def test_create_then_read_by_id_and_by_address(api: Api, test_key: str) -> None:
    status, record, _ = await api.call("POST", "/intents", test_key, body=intent_body(api))
    assert status == 201, record
    TypeAdapter(IntentRecord).validate_python(record)
    assert record["intent_status"] == "PENDING" and record["tx_hash"] is None
    assert record["needs_relay"] is False and record["metadata"] == {"order": "A-1"}
    # 10 USDC + relay (0.10 USD + 5 bps = 0.105) + app fee (10 bps = 0.01)
    assert record["initialAmount"] == "10"
    assert record["fees_in_asset_token"] == "0.105"
    assert record["app_fee_in_asset_token"] == "0.01"
    assert record["total_amount_in_asset_token"] == "10.115"
    assert (record["fees_in_usd"], record["app_fee_in_usd"]) == ("0.105", "0.01")
    assert record["total_amount_in_usd"] == "10.115"
    for path in (f"/intents/{record['id']}", f"/intents/by-address/{record['intent_address']}"):
        status, again, _ = await api.call("GET", path, test_key)
        assert (status, again) == (200, record)
    lower = record["intent_address"].lower()
    status, again, _ = await api.call("GET", f"/intents/by-address/{lower}", test_key)
    assert again == record


async def test_quote_figures_reappear_in_the_intent(api: Api, test_key: str) -> None:
    params = {
        "sourceChain": "BASE_TESTNET",
        "tokenIn": NATIVE_TOKEN,
        "destinationChain": "ARBITRUM_TESTNET",
        "amount": "45",
    }
    status, quote, _ = await api.call("GET", "/quotes/single-source", test_key, params=params)
    assert status == 200, quote
    Quote.model_validate(quote)
    assert (quote["amountSymbol"], quote["initialAmount"]) == ("USD", "0.015")  # 45 USD at 3000
    body = intent_body(
        api, tokenIn=NATIVE_TOKEN, amount=quote["amount"], amountSymbol=quote["amountSymbol"]
    )
    status, record, _ = await api.call("POST", "/intents", test_key, body=body)
    assert status == 201, record
    for field in (
        "initialAmount",
        "fees_in_asset_token",
        "app_fee_in_asset_token",
        "total_amount_in_asset_token",
        "fees_in_usd",
        "app_fee_in_usd",
        "total_amount_in_usd",
        "asset_token_symbol",
        "tokenIn",
        "tokenOut",
    ):
        assert record[field] == quote[field], field


async def test_bridge_options_and_multi_source(api: Api, test_key: str) -> None:
    params = {
        "sourceChain": "BASE_TESTNET",
        "tokenIn": usdc(api),
        "destinationChain": "ARBITRUM_TESTNET",
        "amount": "1000",
    }
    status, found, _ = await api.call("GET", "/quotes/bridge-options", test_key, params=params)
    assert status == 200
    assert [q["bridge"] for q in found["quotes"]] == ["express", "relay"]  # 0.50 < 0.10 + 0.50
    assert found["quotes"][0]["fees_in_asset_token"] == "0.5"
    out = usdc(api, "ARBITRUM_TESTNET")
    params = {"destinationChain": "ARBITRUM_TESTNET", "amount": "100", "tokenOut": out}
    status, multi, _ = await api.call("GET", "/quotes/multi-source", test_key, params=params)
    assert status == 200
    sources = {(q["source_chain"], q["asset_token_symbol"]) for q in multi["quotes"]}
    assert ("BASE_TESTNET", "USDC") in sources and ("ARBITRUM_TESTNET", "USDT") in sources
    assert all(q["source_chain"] != "BASE" for q in multi["quotes"])  # another network class
    totals = [float(q["total_amount_in_usd"]) for q in multi["quotes"]]
    assert totals == sorted(totals)
    params = [*params.items(), ("excludeChains", "BASE_TESTNET")]
    status, fewer, _ = await api.call("GET", "/quotes/multi-source", test_key, params=params)
    assert {q["source_chain"] for q in fewer["quotes"]} == {"ARBITRUM_TESTNET"}


async def test_supported_tokens_follow_the_key_mode(
    api: Api, production_api: Api, test_key: str, make_key: MakeKey
) -> None:
    status, tokens, _ = await api.call("GET", "/chains/tokens/all", test_key)
    assert status == 200
    for token in tokens:
        TokenRecord.model_validate(token)
    chains = {t["chain"] for t in tokens}
    assert chains == {"BASE_TESTNET", "ARBITRUM_TESTNET", "BASE"}  # test environment
    live = await make_key("live")
    status, tokens, _ = await api.call("GET", "/chains/tokens/all", live)
    assert {t["chain"] for t in tokens} == {"BASE"}
    assert {t["address"] for t in tokens} == {MAIN_USDC, NATIVE_TOKEN}
    status, tokens, _ = await production_api.call("GET", "/chains/tokens/all", test_key)
    assert {t["chain"] for t in tokens} == {"BASE_TESTNET", "ARBITRUM_TESTNET"}


async def test_network_class_mismatch(api: Api, production_api: Api, make_key: MakeKey) -> None:
    live = await make_key("live")
    status, data, response = await api.call("POST", "/intents", live, body=intent_body(api))
    assert_problem(status, data, response, 403, "network_class_mismatch")
    assert data["field"] == "source_chain"
    test = await make_key("test")
    params = {"destinationChain": "BASE", "amount": "1", "tokenOut": MAIN_USDC}
    status, data, response = await production_api.call(
        "GET", "/quotes/multi-source", test, params=params
    )
    assert_problem(status, data, response, 403, "network_class_mismatch")
    status, _, _ = await api.call("GET", "/quotes/multi-source", test, params=params)
    assert status == 200  # test keys may use main networks in a test environment


async def test_idempotency_key(api: Api, test_key: str) -> None:
    key = {"Idempotency-Key": f"order-{uuid.uuid4()}"}
    body = intent_body(api)
    results = await asyncio.gather(
        *(api.call("POST", "/intents", test_key, body=body, headers=key) for _ in range(4))
    )
    assert {status for status, _, _ in results} == {201}
    assert len({record["id"] for _, record, _ in results}) == 1
    status, data, response = await api.call(
        "POST", "/intents", test_key, body=intent_body(api, amount="11"), headers=key
    )
    assert_problem(status, data, response, 409, "idempotency_key_reused")
    status, data, response = await api.call(
        "POST", "/intents", test_key, body=body, headers={"Idempotency-Key": "bad key"}
    )
    assert_problem(status, data, response, 400, "validation_error")


async def test_intents_of_other_clients_are_not_found(
    api: Api, test_key: str, make_key: MakeKey
) -> None:
    _, record, _ = await api.call("POST", "/intents", test_key, body=intent_body(api))
    other = await make_key("test", client="someone-else")
    for path in (f"/intents/{record['id']}", f"/intents/by-address/{record['intent_address']}"):
        status, data, response = await api.call("GET", path, other)
        assert_problem(status, data, response, 404, "intent_not_found")
    same_client = await make_key("test", client="acme")
    status, _, _ = await api.call("GET", f"/intents/{record['id']}", same_client)
    assert status == 200


CHECKSUM_BROKEN = PAYEE.replace("C8", "c8")


@pytest.mark.parametrize(
    ("changes", "status", "code", "field"),
    [
        ({"source_chain": "SOLANA"}, 422, "unknown_chain", "source_chain"),
        ({"destination_chain": "base"}, 422, "unknown_chain", "destination_chain"),
        ({"tokenIn": "0x" + "1" * 40}, 422, "unknown_token", "tokenIn"),
        ({"tokenIn": "0x123"}, 422, "invalid_address", "tokenIn"),
        ({"recipient": CHECKSUM_BROKEN}, 422, "invalid_address_checksum", "recipient"),
        ({"refund_address": "vitalik.eth"}, 422, "invalid_address", "refund_address"),
        ({"amount": "10.1234567"}, 422, "amount_too_precise", "amount"),
        ({"amount": "-1"}, 422, "amount_negative", "amount"),
        ({"amount": "0"}, 422, "amount_zero", "amount"),
        ({"amount": "1e3"}, 422, "amount_malformed", "amount"),
        ({"amountSymbol": "DOGE"}, 422, "unsupported_amount_symbol", "amountSymbol"),
        ({"expires_in": 5}, 422, "invalid_expiry", "expires_in"),
        ({"bridge": "teleport"}, 422, "unknown_bridge", "bridge"),
        ({"amount": 10}, 400, "validation_error", "amount"),
        ({"recipient": None}, 400, "validation_error", "recipient"),
        ({"colour": "blue"}, 400, "validation_error", "colour"),
        ({"metadata": {"x": "a\u0000b"}}, 400, "validation_error", "metadata"),
        ({"metadata": {"x": "y" * 17_000}}, 422, "metadata_too_large", "metadata"),
        ({"metadata": {"n": 1.9e19}}, 422, "invalid_metadata", "metadata"),
        ({"metadata": {"n": [-1.7976931348623157e308]}}, 422, "invalid_metadata", "metadata"),
    ],
)
async def test_invalid_intents_get_precise_problems(  # noqa: PLR0917 - parametrized
    api: Api, test_key: str, changes: dict[str, Any], status: int, code: str, field: str
) -> None:
    body = intent_body(api, **{k: v for k, v in changes.items() if v is not None})
    for name, value in changes.items():
        if value is None:
            body.pop(name)
    got, data, response = await api.call("POST", "/intents", test_key, body=body)
    assert_problem(got, data, response, status, code)
    assert data["field"] == field


async def test_malformed_bodies(api: Api, test_key: str) -> None:
    url = f"{api.url}/api/v1/intents"
    auth = {"Authorization": f"Bearer {test_key}"}
    cases = [
        (b"{not json", "application/json", 400, "malformed_json"),
        (b'{"amount": "\\ud800"}', "application/json", 400, "malformed_json"),
        (b"amount=1", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
        (b"[1, 2]", "application/json", 400, "validation_error"),
        (
            b"{" + b'"a":' * 0 + b'"x": "' + b"y" * 70_000 + b'"}',
            "application/json",
            413,
            "body_too_large",
        ),
    ]
    for raw, media, status, code in cases:
        headers = {**auth, "Content-Type": media}
        async with api.http.post(url, data=raw, headers=headers) as response:
            data = await response.json(content_type=None)
            assert_problem(response.status, data, response, status, code)


async def test_unknown_intents_and_bad_paths(api: Api, test_key: str) -> None:
    cases = [
        ("/intents/999999999", 404, "intent_not_found"),
        (f"/intents/by-address/0x{'5' * 40}", 404, "intent_not_found"),
        ("/intents/by-address/nope", 422, "invalid_address"),
        ("/intents/0", 400, "validation_error"),
        ("/intents/99999999999999999999999", 400, "validation_error"),
        ("/no-such-endpoint", 404, "not_found"),
    ]
    for path, status, code in cases:
        got, data, response = await api.call("GET", path, test_key)
        assert_problem(got, data, response, status, code)
    got, data, response = await api.call("DELETE", "/intents/1", test_key)
    assert_problem(got, data, response, 405, "method_not_allowed")


async def test_authentication_failures(api: Api, pool: Pool, make_key: MakeKey) -> None:
    revoked = await make_key("test")
    async with pool.acquire() as conn:
        key = await api_keys.find_by_hash(conn, hash_key(revoked))
        assert key is not None
        await api_keys.revoke(conn, key.id)
    cases: list[tuple[dict[str, str], str]] = [
        ({}, "missing_credentials"),
        ({"Authorization": "Basic dXNlcjpwdw=="}, "invalid_authorization"),
        ({"Authorization": "Bearer itd_test_" + "A" * 43}, "invalid_api_key"),
        ({"Authorization": "Bearer garbage"}, "invalid_api_key"),
        ({"Authorization": f"Bearer {revoked}"}, "api_key_revoked"),
        ({"Authorization": "Bearer itd_sess_abc.def"}, "session_token_not_accepted"),
    ]
    for headers, code in cases:
        status, data, response = await api.call("GET", "/chains/tokens/all", None, headers=headers)
        assert_problem(status, data, response, 401, code)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert "itd_test_" not in data["detail"]


async def test_rate_limit_per_key(api: Api, make_key: MakeKey, test_key: str) -> None:
    limited = await make_key("test", rate_limit=3)
    # At once, not one after another: four calls in a row on a loaded machine may take
    # longer than the third of a second a token takes to come back.
    results = await asyncio.gather(
        *(api.call("GET", "/chains/tokens/all", limited) for _ in range(4))
    )
    assert sorted(status for status, _, _ in results) == [200, 200, 200, 429]
    status, data, response = next(r for r in results if r[0] == 429)
    assert_problem(status, data, response, 429, "rate_limited")
    assert int(response.headers["Retry-After"]) >= 1
    status, _, _ = await api.call("GET", "/chains/tokens/all", test_key)
    assert status == 200  # other keys are not affected
    await asyncio.sleep(0.4)
    status, _, _ = await api.call("GET", "/chains/tokens/all", limited)
    assert status == 200


async def test_default_limit_is_250_per_second(api: Api, make_key: MakeKey) -> None:
    key = await make_key("test")
    started = time.monotonic()
    results = await asyncio.gather(
        *(api.call("GET", "/chains/tokens/all?chain=BASE", key) for _ in range(600))
    )
    elapsed = time.monotonic() - started
    admitted = sum(status == 200 for status, _, _ in results)
    assert {status for status, _, _ in results} <= {200, 429}
    # a full bucket of 250, then 250 per second
    assert 250 <= admitted <= 251 + 250 * elapsed, (admitted, elapsed)


async def test_openapi_document_is_served(api: Api) -> None:
    async with api.http.get(f"{api.url}/api/v1/openapi.json") as response:
        document = await response.json()
    paths = document["paths"]
    for path in (
        "/api/v1/intents",
        "/api/v1/intents/{intent_id}",
        "/api/v1/intents/by-address/{intent_address}",
        "/api/v1/intents/{intent_address}/trigger-processing",
        "/api/v1/quotes/multi-source",
        "/api/v1/quotes/single-source",
        "/api/v1/quotes/bridge-options",
        "/api/v1/chains/tokens/all",
        "/api/v1/sessions",
        "/api/v1/session/quotes",
        "/api/v1/session/intents",
        "/api/v1/session/intents/{intent_address}/payment-made",
    ):
        assert path in paths, path
    create = paths["/api/v1/intents"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/IntentCreate"
    )
    assert PROBLEM in create["responses"]["422"]["content"]
    assert "IntentCreate" in document["components"]["schemas"]


async def test_a_query_parameter_given_twice_is_refused_unless_it_is_a_list(
    api: Api, test_key: str
) -> None:
    # Found by schemathesis: `amount=574296&amount=false&amount=574296` was answered 200
    # with whichever value came last. A single-valued parameter takes one value.
    base = [("destinationChain", "ARBITRUM_TESTNET"), ("tokenOut", usdc(api, "ARBITRUM_TESTNET"))]
    twice = [*base, ("amount", "100"), ("amount", "false")]
    status, data, response = await api.call("GET", "/quotes/multi-source", test_key, params=twice)
    assert_problem(status, data, response, 422, "repeated_parameter")
    assert data["field"] == "amount"
    lists = [*base, ("amount", "100"), ("excludeChains", "BASE"), ("excludeChains", "BASE_TESTNET")]
    status, found, _ = await api.call("GET", "/quotes/multi-source", test_key, params=lists)
    assert status == 200
    assert {q["source_chain"] for q in found["quotes"]} == {"ARBITRUM_TESTNET"}
