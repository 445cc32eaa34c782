"""Trigger-processing against the anvil chain (no poller running), and the
payment-modal session flow end to end."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.integration.api.conftest import SESSION_SECRET, Api, MakeKey

from intentd.adapters.postgres import Pool, api_keys
from intentd.api.models import SessionCreated, TriggerResult
from intentd.api.sessions.tokens import Session, sign_session
from intentd.credentials import hash_key
from intentd_dev.devchain import MINT, TRANSFER, DevChain, call_data

pytestmark = pytest.mark.integration

PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


def usdc(api: Api, chain: str) -> str:
    return next(t.address for t in api.settings.chains[chain].tokens if t.symbol == "USDC")


@pytest.fixture
async def base_chain(api: Api) -> AsyncIterator[tuple[DevChain, str]]:
    """The BASE_TESTNET anvil and a payer account holding 1,000 test USDC."""
    async with DevChain(api.settings.chains["BASE_TESTNET"].rpc_urls[0]) as chain:
        payer = (await chain.accounts())[7]
        token = usdc(api, "BASE_TESTNET")
        await chain.receipt(await chain.send(payer, token, data=call_data(MINT, payer, 10**9)))
        yield chain, payer


async def pay(chain: DevChain, payer: str, token: str, to: str, amount: int) -> str:
    tx_hash = await chain.send(payer, token, data=call_data(TRANSFER, to, amount))
    await chain.receipt(tx_hash)
    return tx_hash


async def new_intent(api: Api, key: str, amount: str = "10") -> dict[str, Any]:
    body = {
        "amount": amount,
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "source_chain": "BASE_TESTNET",
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": PAYEE,
        "refund_address": PAYEE,
    }
    status, record, _ = await api.call("POST", "/intents", key, body=body)
    assert status == 201, record
    return record


async def trigger(api: Api, key: str, address: str) -> dict[str, Any]:
    status, result, _ = await api.call("POST", f"/intents/{address}/trigger-processing", key)
    assert status == 200, result
    TriggerResult.model_validate(result)
    return result


async def test_trigger_finds_credits_once_and_cross_checks_the_balance(
    api: Api, test_key: str, base_chain: tuple[DevChain, str]
) -> None:
    chain, payer = base_chain
    token = usdc(api, "BASE_TESTNET")
    record = await new_intent(api, test_key)  # 10 + 0.105 + 0.01 = 10.115 USDC due
    address = record["intent_address"]

    nothing = await trigger(api, test_key, address)
    assert nothing["deposits"] == [] and nothing["balance"]["amount"] == "0"
    assert nothing["scan"]["complete"] is True

    first = await pay(chain, payer, token, address, 4_000_000)
    found = await trigger(api, test_key, address)
    assert [(d["tx_hash"], d["new"], d["disposition"]) for d in found["deposits"]] == [
        (first, True, "credited")
    ]
    assert found["intent"]["funding_status"] == "UNDERFUNDED"
    assert found["intent"]["amount_received"] == "4" == found["balance"]["amount"]

    again = await trigger(api, test_key, address)
    assert [(d["tx_hash"], d["new"]) for d in again["deposits"]] == [(first, False)]
    assert again["intent"]["amount_received"] == "4"

    second = await pay(chain, payer, token, address, 6_115_000)
    results = await asyncio.gather(*(trigger(api, test_key, address) for _ in range(3)))
    assert sum(d["new"] for r in results for d in r["deposits"] if d["tx_hash"] == second) == 1
    final = results[-1]
    assert final["intent"]["intent_status"] == "FUNDED"
    assert final["intent"]["funding_status"] == "EXACT"
    assert final["intent"]["amount_received"] == "10.115" == final["balance"]["amount"]


async def test_trigger_of_unknown_or_foreign_intents(
    api: Api, test_key: str, make_key: MakeKey
) -> None:
    record = await new_intent(api, test_key)
    other = await make_key("test")
    path = f"/intents/{record['intent_address']}/trigger-processing"
    status, data, _ = await api.call("POST", path, other)
    assert (status, data["code"]) == (404, "intent_not_found")
    status, data, _ = await api.call("POST", f"/intents/0x{'6' * 40}/trigger-processing", test_key)
    assert (status, data["code"]) == (404, "intent_not_found")


async def new_session(api: Api, key: str, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "recipient": PAYEE,
        "amount": "5",
        "destinationChain": "ARBITRUM_TESTNET",
        "token": usdc(api, "ARBITRUM_TESTNET"),
        "excludeChains": ["ARBITRUM_TESTNET"],
    }
    body.update(changes)
    status, created, _ = await api.call("POST", "/sessions", key, body=body)
    assert status == 201, created
    SessionCreated.model_validate(created)
    return created


async def test_session_flow_from_quote_to_payment(
    api: Api, test_key: str, base_chain: tuple[DevChain, str]
) -> None:
    chain, payer = base_chain
    session = await new_session(api, test_key)
    token = session["session_token"]
    assert token.startswith("itd_sess_") and session["amount"] == "5"

    status, info, _ = await api.call("GET", "/session", token)
    assert status == 200 and info["token"]["symbol"] == "USDC"

    status, found, _ = await api.call("GET", "/session/quotes", token)
    assert status == 200
    assert {q["source_chain"] for q in found["quotes"]} == {"BASE_TESTNET"}
    assert {q["amount"] for q in found["quotes"]} == {"5"}
    params = {"excludeChains": "BASE_TESTNET"}
    status, none, _ = await api.call("GET", "/session/quotes", token, params=params)
    assert (status, none["quotes"]) == (200, [])

    choice = {
        "source_chain": "BASE_TESTNET",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "refund_address": payer,
    }
    status, data, _ = await api.call(
        "POST", "/session/intents", token, body={**choice, "source_chain": "ARBITRUM_TESTNET"}
    )
    assert (status, data["code"]) == (403, "session_constraint")
    status, data, _ = await api.call(
        "POST", "/session/intents", token, body={**choice, "amount": "6"}
    )
    assert (status, data["code"]) == (403, "session_constraint")

    status, record, _ = await api.call("POST", "/session/intents", token, body=choice)
    assert status == 201, record
    assert record["session_id"] == session["session_id"]
    assert record["metadata"] == {"session_id": session["session_id"]}
    assert (record["recipient"], record["destination_chain"]) == (PAYEE, "ARBITRUM_TESTNET")
    assert record["tokenOut"] == usdc(api, "ARBITRUM_TESTNET")
    quoted = next(q for q in found["quotes"] if q["tokenIn"] == record["tokenIn"])
    assert record["total_amount_in_asset_token"] == quoted["total_amount_in_asset_token"]

    address = record["intent_address"]
    due = int(record["total_amount_in_asset_token"].replace(".", "").ljust(7, "0"))
    await pay(chain, payer, usdc(api, "BASE_TESTNET"), address, due)
    status, result, _ = await api.call("POST", f"/session/intents/{address}/payment-made", token)
    assert status == 200, result
    assert result["intent"]["funding_status"] == "EXACT"
    assert [d["new"] for d in result["deposits"]] == [True]

    status, read, _ = await api.call("GET", f"/session/intents/{address}", token)
    assert status == 200 and read["intent_status"] == "FUNDED"


async def test_sessions_never_grant_more_than_the_session(
    api: Api, test_key: str, pool: Pool, make_key: MakeKey
) -> None:
    session = await new_session(api, test_key)
    token = session["session_token"]
    other = (await new_session(api, test_key))["session_token"]
    choice = {
        "source_chain": "BASE_TESTNET",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "refund_address": PAYEE,
    }
    _, record, _ = await api.call("POST", "/session/intents", token, body=choice)
    address = record["intent_address"]
    status, data, _ = await api.call("GET", f"/session/intents/{address}", other)
    assert (status, data["code"]) == (404, "intent_not_found")
    by_key = await new_intent_via_key(api, test_key)
    status, data, _ = await api.call("GET", f"/session/intents/{by_key}", token)
    assert (status, data["code"]) == (404, "intent_not_found")

    status, data, _ = await api.call("GET", "/chains/tokens/all", token)
    assert (status, data["code"]) == (401, "session_token_not_accepted")
    status, data, _ = await api.call("POST", f"/intents/{address}/trigger-processing", token)
    assert (status, data["code"]) == (401, "session_token_not_accepted")
    status, data, _ = await api.call("GET", "/session", test_key)
    assert (status, data["code"]) == (401, "session_token_required")

    payload, signature = token.removeprefix("itd_sess_").split(".")
    status, data, _ = await api.call("GET", "/session", f"itd_sess_{payload}x.{signature}")
    assert (status, data["code"]) == (401, "invalid_session_token")
    now = int(time.time())
    expired = Session(
        id="ses_old",
        key_id=uuid.uuid4(),
        client_id=uuid.uuid4(),
        recipient=PAYEE.lower(),
        amount=None,
        destination_chain="ARBITRUM_TESTNET",
        token=usdc(api, "ARBITRUM_TESTNET").lower(),
        exclude_chains=(),
        issued_at=now - 120,
        expires_at=now - 60,
    )
    stale = sign_session(expired, SESSION_SECRET.encode())
    status, data, _ = await api.call("GET", "/session", stale)
    assert (status, data["code"]) == (401, "session_expired")

    revoked_key = await make_key("test")
    revoked_session = (await new_session(api, revoked_key))["session_token"]
    async with pool.acquire() as conn:
        key = await api_keys.find_by_hash(conn, hash_key(revoked_key))
        assert key is not None
        await api_keys.revoke(conn, key.id)
    await asyncio.sleep(api.settings.api.key_cache_ttl + 0.1)
    status, data, _ = await api.call("GET", "/session", revoked_session)
    assert (status, data["code"]) == (401, "api_key_revoked")


async def new_intent_via_key(api: Api, key: str) -> str:
    return str((await new_intent(api, key))["intent_address"])


async def test_open_amount_sessions_and_session_errors(api: Api, test_key: str) -> None:
    open_session = await new_session(api, test_key, amount="0", excludeChains=[])
    assert open_session["amount"] is None
    token = open_session["session_token"]
    status, data, _ = await api.call("GET", "/session/quotes", token)
    assert (status, data["code"]) == (422, "field_required")
    status, found, _ = await api.call("GET", "/session/quotes", token, params={"amount": "2.5"})
    assert status == 200 and {q["amount"] for q in found["quotes"]} == {"2.5"}
    choice = {
        "source_chain": "ARBITRUM_TESTNET",
        "tokenIn": usdc(api, "ARBITRUM_TESTNET"),
        "refund_address": PAYEE,
        "amount": "2.5",
    }
    status, record, _ = await api.call("POST", "/session/intents", token, body=choice)
    assert status == 201 and record["initialAmount"] == "2.5"

    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"destinationChain": "NOPE"}, 422, "unknown_chain"),
        ({"token": "0x" + "1" * 40}, 422, "unknown_token"),
        ({"recipient": "0x12"}, 422, "invalid_address"),
        ({"amount": "1.1234567"}, 422, "amount_too_precise"),
        ({"amount": "-5"}, 422, "amount_negative"),
        ({"excludeChains": ["MARS"]}, 422, "unknown_chain"),
        ({"expires_in": 10}, 422, "invalid_expiry"),
        ({"recipient": 5}, 400, "validation_error"),
    ]
    body = {
        "recipient": PAYEE,
        "destinationChain": "ARBITRUM_TESTNET",
        "token": usdc(api, "ARBITRUM_TESTNET"),
    }
    for changes, expected, code in cases:
        status, data, _ = await api.call("POST", "/sessions", test_key, body={**body, **changes})
        assert (status, data["code"]) == (expected, code), changes
