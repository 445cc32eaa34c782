"""``GET /api/v1/chains``, ``/chains/all`` and ``/chains/{chain}/tokens`` over real HTTP: a
key sees the chains of the network classes it may use only."""

from __future__ import annotations

import pytest
from tests.integration.api.conftest import MAIN_USDC, Api, MakeKey
from tests.integration.api.events_support import assert_problem

from intentd.api.chains.routes import ChainList
from intentd.api.models import TokenRecord
from intentd.settings import NATIVE_TOKEN

pytestmark = pytest.mark.integration


async def test_a_test_key_sees_the_test_networks(production_api: Api, test_key: str) -> None:
    status, body, _ = await production_api.call("GET", "/chains/all", test_key)
    assert status == 200, body
    ChainList.model_validate(body)
    assert [c["name"] for c in body["data"]] == ["ARBITRUM_TESTNET", "BASE_TESTNET"]
    base = body["data"][1]
    assert (base["chain_id"], base["network"]) == (84532, "test")
    assert base["native"] == {
        "symbol": "ETH",
        "decimals": 18,
        "name": "Ether",
        "category": "major",
        "chain": "BASE_TESTNET",
        "chain_id": 84532,
        "network": "test",
        "address": NATIVE_TOKEN,
    }
    configured = production_api.settings.chains["BASE_TESTNET"].tokens
    assert [t["symbol"] for t in base["tokens"]] == [t.symbol for t in configured]
    assert [t["address"] for t in base["tokens"]] == [t.address for t in configured]


async def test_in_a_test_environment_test_keys_see_main_networks_too(
    api: Api, test_key: str
) -> None:
    status, body, _ = await api.call("GET", "/chains/all", test_key)
    assert status == 200, body
    assert [c["name"] for c in body["data"]] == ["ARBITRUM_TESTNET", "BASE", "BASE_TESTNET"]


async def test_a_live_key_sees_the_main_networks(api: Api, make_key: MakeKey) -> None:
    key = await make_key("live")
    status, body, _ = await api.call("GET", "/chains/all", key)
    assert status == 200, body
    assert [(c["name"], c["network"]) for c in body["data"]] == [("BASE", "main")]
    assert [t["address"] for t in body["data"][0]["tokens"]] == [MAIN_USDC]
    status, body, _ = await api.call("GET", "/chains/BASE/tokens", key)
    assert status == 200, body
    assert [t["address"] for t in body] == [NATIVE_TOKEN, MAIN_USDC]


async def test_a_chains_tokens_are_those_of_tokens_all(
    api: Api, production_api: Api, test_key: str
) -> None:
    status, body, _ = await api.call("GET", "/chains/BASE_TESTNET/tokens", test_key)
    assert status == 200, body
    for token in body:
        TokenRecord.model_validate(token)
    _, same, _ = await api.call(
        "GET", "/chains/tokens/all", test_key, params={"chain": "BASE_TESTNET"}
    )
    assert body == same and body[0]["address"] == NATIVE_TOKEN
    for chain in ("BASE", "MOON"):  # another network class, or none: the same 404
        status, body, _ = await production_api.call("GET", f"/chains/{chain}/tokens", test_key)
        assert_problem(status, body, 404, "chain_not_found", None)


async def test_needs_an_api_key(api: Api) -> None:
    status, body, _ = await api.call("GET", "/chains", None)
    assert status == 401 and body["code"] == "missing_credentials"


async def test_chains_answers_the_names_the_sdk_reads(api: Api, make_key: MakeKey) -> None:
    """The Chainrails SDK's ``chains.getSupported``: names, optionally of one network class."""
    test_key = await make_key("test")
    status, body, _ = await api.call("GET", "/chains", test_key)
    assert (status, body) == (200, ["ARBITRUM_TESTNET", "BASE", "BASE_TESTNET"])
    status, body, _ = await api.call("GET", "/chains", test_key, params={"network": "testnet"})
    assert (status, body) == (200, ["ARBITRUM_TESTNET", "BASE_TESTNET"])
    status, body, _ = await api.call("GET", "/chains", await make_key("live"))
    assert (status, body) == (200, ["BASE"])
    status, body, _ = await api.call("GET", "/chains/BASE_MAINNET/tokens", test_key)
    assert status == 200 and body[1]["chain"] == "BASE", body
