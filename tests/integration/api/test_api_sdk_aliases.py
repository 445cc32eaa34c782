"""The Chainrails SDK's paths and names over real HTTP (``api.sdk_routes``,
``intents.chain_names``): the SDK's main-network names mean ours and answers carry ours;
its body field names reach the same checks as ours; its session answer names; what we
refuse rather than answer wrongly (an offset, a field given under both names)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from eth_account import Account
from tests.integration.api.conftest import MAIN_USDC, Api, MakeKey
from tests.integration.api.events_support import assert_problem, until

from intentd.adapters.postgres import api_keys

pytestmark = pytest.mark.integration


def _usdc(api: Api, chain: str) -> str:
    return api.settings.chains[chain].tokens[0].address


async def _listed(api: Api, key: str, params: dict[str, str]) -> list[int]:
    """The ids ``GET /intents`` shows once it shows any (an intent is listed once every
    older transaction has ended; the database is shared)."""

    async def check() -> list[int] | None:
        status, page, _ = await api.call("GET", "/intents", key, params=params)
        assert status == 200, page
        return [i["id"] for i in page["data"]] or None

    return await until(check)


def _address() -> str:
    return str(Account.create().address)


async def test_the_sdks_main_network_names_mean_ours(api: Api, make_key: MakeKey) -> None:
    key = await make_key("test")
    body = {
        "amount": "4",
        "amountSymbol": "USDC",
        "tokenIn": MAIN_USDC,
        "source_chain": "BASE_MAINNET",
        "destination_chain": "BASE_MAINNET",
        "recipient": _address(),
        "refund_address": _address(),
        "sender": _address(),
    }
    status, record, _ = await api.call("POST", "/intents", key, body=body)
    assert status == 201, record
    assert (record["source_chain"], record["destination_chain"]) == ("BASE", "BASE")
    params = {"destinationChain": "BASE_MAINNET", "amount": "4", "tokenOut": MAIN_USDC}
    status, found, _ = await api.call("GET", "/quotes/multi-source", key, params=params)
    assert status == 200 and {q["destination_chain"] for q in found["quotes"]} == {"BASE"}
    params["excludeChains"] = "ARBITRUM_TESTNET,BASE_MAINNET"  # one value, the SDK's way
    status, found, _ = await api.call("GET", "/quotes/multi-source", key, params=params)
    assert (status, found["quotes"]) == (200, [])
    for params in ({"source_chain": "BASE_MAINNET"}, {"status": "pending"}):
        assert await _listed(api, key, params) == [record["id"]], params
    status, problem, _ = await api.call("GET", "/intents", key, params={"offset": "50"})
    assert_problem(status, problem, 400, "validation_error", "offset")
    status, listed, _ = await api.call("GET", f"/intents/user/{body['sender'].lower()}", key)
    assert (status, listed) == (200, [record])
    status, listed, _ = await api.call("GET", f"/intents/user/{_address()}", key)
    assert (status, listed) == (200, [])
    status, problem, _ = await api.call("GET", "/intents/user/nobody", key)
    assert_problem(status, problem, 422, "invalid_address", "sender")
    live = await make_key("live")
    status, problem, _ = await api.call("GET", f"/intents/address/{record['intent_address']}", live)
    assert_problem(status, problem, 404, "intent_not_found", None)  # the rule of our path


async def test_modal_sessions_take_the_sdks_fields_and_answer_its_names(
    api: Api, make_key: MakeKey
) -> None:
    key = await make_key("test")
    asked: dict[str, Any] = {
        "recipient": _address(),
        "tokenOut": _usdc(api, "ARBITRUM_TESTNET"),
        "destinationChain": "ARBITRUM_TESTNET",
        "amount": "3",
        "excludeChains": ["ARBITRUM_TESTNET"],
    }
    status, session, _ = await api.call("POST", "/modal/sessions", key, body=asked)
    assert status == 201, session
    assert session["sessionToken"] == session["session_token"]
    assert (session["sessionId"], session["expiresAt"]) == (
        session["session_id"],
        session["expires_at"],
    )
    status, problem, _ = await api.call(
        "POST", "/modal/sessions", key, body={**asked, "token": asked["tokenOut"]}
    )
    assert_problem(status, problem, 400, "validation_error", "token")
    status, problem, _ = await api.call("POST", "/sessions", key, body=asked)
    assert_problem(status, problem, 400, "validation_error", "token")  # ours: our names only

    token = session["sessionToken"]
    choice = {
        "sender": _address(),
        "tokenIn": _usdc(api, "ARBITRUM_TESTNET"),
        "sourceChain": "ARBITRUM_TESTNET",
        "refundAddress": _address(),
        "metadata": {"reference": "typed by the payer"},
    }
    status, problem, _ = await api.call("POST", "/modal/sessions/intents", token, body=choice)
    assert_problem(status, problem, 403, "session_constraint", "source_chain")
    choice |= {"sourceChain": "BASE_TESTNET", "tokenIn": _usdc(api, "BASE_TESTNET")}
    status, record, _ = await api.call("POST", "/modal/sessions/intents", token, body=choice)
    assert status == 201, record
    assert record["metadata"] == {"session_id": session["session_id"]}
    address = record["intent_address"]
    status, read, _ = await api.call("GET", f"/modal/sessions/intents/{address}", token)
    assert (status, read) == (200, record)
    status, problem, _ = await api.call("GET", f"/modal/sessions/intents/{address}", key)
    assert_problem(status, problem, 401, "session_token_required", None)


async def test_a_session_sees_its_client_and_nothing_more(
    api: Api, production_api: Api, make_key: MakeKey
) -> None:
    """``GET /session/client`` and the SDK's ``getClientInfoForSession``: the session's
    client by id and name, the network classes of its key, the chains the payer may pay
    from less the session's exclusions; no key, no secret, nothing of another client."""
    name = f"shop-{secrets.token_hex(4)}"
    key = await make_key("test", client=name)
    await make_key("test", client=f"other-{secrets.token_hex(4)}")
    asked = {
        "recipient": _address(),
        "token": _usdc(api, "ARBITRUM_TESTNET"),
        "destinationChain": "ARBITRUM_TESTNET",
        "excludeChains": ["BASE_TESTNET"],
    }
    status, session, _ = await api.call("POST", "/sessions", key, body=asked)
    assert status == 201, session
    token = session["session_token"]
    seen = {  # environment "test": a test key may use the main networks too
        "id": str(api_keys.client_id_of(name)),
        "name": name,
        "networks": ["main", "test"],
        "chains": ["ARBITRUM_TESTNET", "BASE"],
    }
    for path in ("/session/client", "/modal/sessions/client"):
        status, client, response = await api.call("GET", path, token)
        assert (status, client) == (200, seen), path
        assert key not in await response.text()
    status, problem, _ = await api.call("GET", "/session/client", key)
    assert_problem(status, problem, 401, "session_token_required", None)
    status, problem, _ = await api.call("GET", "/modal/sessions/client", None)
    assert_problem(status, problem, 401, "missing_credentials", None)

    for mode, destination, networks, chains in (
        ("test", "ARBITRUM_TESTNET", ["test"], ["ARBITRUM_TESTNET", "BASE_TESTNET"]),
        ("live", "BASE", ["main"], ["BASE"]),
    ):
        key = await make_key(mode, client=name)
        token_out = MAIN_USDC if destination == "BASE" else _usdc(api, destination)
        body = {**asked, "token": token_out, "destinationChain": destination, "excludeChains": []}
        status, session, _ = await production_api.call("POST", "/sessions", key, body=body)
        assert status == 201, session
        status, client, _ = await production_api.call(
            "GET", "/session/client", session["session_token"]
        )
        assert (status, client) == (200, {**seen, "networks": networks, "chains": chains}), mode


async def test_the_aliases_stay_out_of_the_openapi_document(api: Api) -> None:
    status, document, _ = await api.call("GET", "/openapi.json", None)
    assert status == 200
    assert not [p for p in document["paths"] if "/modal/" in p or "/intents/user/" in p]
    assert "/api/v1/intents/address/{intent_address}" not in document["paths"]
