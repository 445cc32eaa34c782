"""The Chainrails SDK (``@chainrails/sdk`` 0.3.7, from npm) works against intentd with only
its base URL changed: ``intentd api`` as a user runs it (on two anvil chains of its own,
provisioned as devinfra provisions the dev chains: USDC at the real test networks'
addresses, which the SDK's token table holds), ``tests/sdk/flows.mjs`` in Node
running the merchant's calls (chains, quotes, create, the three reads, the list,
trigger-processing of a real payment in the placed USDC, a session token) and the payment
modal's with the session token (its client, session quotes, create, read, "payment
made"). Each call's
answer is checked for what an SDK user reads of it (docs/api.md, "Chainrails SDK
compatibility").
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
from collections.abc import AsyncIterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from eth_typing import ChecksumAddress
from tests.support import ROOT, daemon_env, send_payments, start_daemon, until_serving, wait_exit
from tests.support import run_cli as cli

from intentd.adapters.postgres import Pool
from intentd.settings import Settings
from intentd_dev.devinfra.accounts import Role, dev_account
from intentd_dev.devinfra.anvil import AnvilProcess, free_port, start_anvil
from intentd_dev.devinfra.chains import DEV_CHAINS, provision_tokens
from intentd_dev.devinfra.contracts import connect, token_artifact

pytestmark = pytest.mark.e2e

PAYER_KEY = dev_account(Role.PAYER).private_key
"""Holds the dev tokens on the test's chains (minted by devinfra's provisioning)."""
SDK_ARBITRUM_USDC = "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d"
"""USDC on Arbitrum Sepolia in the SDK's token table."""


@pytest.fixture
async def chains() -> AsyncIterator[dict[str, str]]:
    """The dev chains' endpoints and tokens as infra.env names them, on anvils of this test."""
    started: list[AnvilProcess] = []
    found: dict[str, str] = {}
    try:
        for dev_chain in DEV_CHAINS:
            own = await asyncio.to_thread(start_anvil, dev_chain.chain_id)
            started.append(own)
            tokens = await asyncio.to_thread(_provision, own.url, dev_chain.real_tokens)
            found[f"INTENTD_{dev_chain.name}_RPC_URL"] = own.url
            for symbol, address in tokens.items():
                found[f"INTENTD_{dev_chain.name}_{symbol}"] = address
        yield found
    finally:
        for own in started:
            await asyncio.to_thread(own.stop)


def _provision(url: str, real: Mapping[str, ChecksumAddress]) -> dict[str, ChecksumAddress]:
    with connect(url) as w3:
        return provision_tokens(w3, token_artifact(), real)


async def run_flows(env: dict[str, str], rpc_url: str) -> dict[str, dict[str, Any]]:
    """Run the flows; pay the intent when the script asks (the dev payer's USDC)."""
    node = shutil.which("node")
    assert node is not None, "node is not installed"
    script = await asyncio.create_subprocess_exec(
        node,
        str(ROOT / "tests/sdk/flows.mjs"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert script.stdin is not None and script.stdout is not None
    calls: dict[str, dict[str, Any]] = {}
    async with asyncio.timeout(120):
        async for line in script.stdout:
            if not line.startswith(b"{"):
                continue
            message = json.loads(line)
            if "pay" in message:
                due = int(Decimal(message["amount"]) * 10**6)
                payment = (env["SDK_SOURCE_TOKEN"], message["pay"], due)
                await asyncio.to_thread(send_payments, rpc_url, PAYER_KEY, [payment])
                script.stdin.write(b"paid\n")
                await script.stdin.drain()
            else:
                calls[message["call"]] = message
        assert await script.wait() == 0, await script.stderr.read() if script.stderr else b""
    return calls


def value(calls: dict[str, dict[str, Any]], name: str) -> Any:
    call = calls[name]
    assert call["ok"], f"{name} failed: {call}"
    return call["value"]


@pytest.mark.timeout(180)
async def test_the_sdk_runs_a_merchant_and_a_modal_flow(
    own_stack: tuple[Settings, Pool], chains: dict[str, str], tmp_path: Path
) -> None:
    settings, _ = own_stack
    port = free_port()
    env = daemon_env(
        settings,
        INTENTD__API__PORT=str(port),
        INTENTD_SESSION_SECRET=secrets.token_urlsafe(32),
        INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",  # own automining chains
        INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
        **chains,
    )
    log = tmp_path / "api.log"
    daemon = start_daemon(["api"], env, log)
    try:
        api = f"http://127.0.0.1:{port}/api/v1"
        await until_serving(daemon, f"{api}/openapi.json", log)
        cli(env, "clients", "create", "sdk-shop", "--exist-ok")
        key = cli(env, "keys", "create", "--client", "sdk-shop", "--mode", "test")["api_key"]
        sender = str(Account.create().address)
        calls = await run_flows(
            {
                **env,
                "INTENTD_API_URL": api,
                "INTENTD_API_KEY": key,
                "SDK_SOURCE_TOKEN": chains["INTENTD_BASE_TESTNET_USDC"],
                "SDK_DESTINATION_TOKEN": SDK_ARBITRUM_USDC,
                "SDK_SENDER": sender,
                "SDK_RECIPIENT": str(Account.create().address),
                "SDK_REFUND": str(Account.create().address),
            },
            chains["INTENTD_BASE_TESTNET_RPC_URL"],
        )
    finally:
        daemon.terminate()
        await wait_exit(daemon, 30)
    check_merchant_calls(calls, sender)
    check_modal_calls(calls)


def check_merchant_calls(calls: dict[str, dict[str, Any]], sender: str) -> None:
    assert value(calls, "chains.getSupported") == ["ARBITRUM_TESTNET", "BASE_TESTNET"]
    assert value(calls, "chains.getSupported.testnet") == ["ARBITRUM_TESTNET", "BASE_TESTNET"]
    quotes = value(calls, "quotes.getAll")["quotes"]
    # excludeChains came as one comma-separated value, in the SDK's names
    assert {q["source_chain"] for q in quotes} == {"ARBITRUM_TESTNET", "BASE_TESTNET"}, quotes
    intent = value(calls, "intents.create")
    assert intent["intent_status"] == "PENDING"
    assert (intent["source_chain"], intent["destination_chain"]) == (
        "BASE_TESTNET",
        "ARBITRUM_TESTNET",
    )
    assert intent["metadata"] == {"description": "a coffee", "reference": "order-1"}
    assert value(calls, "intents.getById") == intent
    assert value(calls, "intents.getForAddress") == intent
    triggered = value(calls, "intents.triggerProcessing")  # the payment is found, credited
    assert triggered["intent"]["id"] == intent["id"]
    assert triggered["scan"]["chain"] == "BASE_TESTNET"
    assert [(d["new"], d["disposition"]) for d in triggered["deposits"]] == [(True, "credited")]
    funded = triggered["intent"]
    assert (funded["intent_status"], funded["funding_status"]) == ("FUNDED", "EXACT")
    assert value(calls, "intents.getForSender") == [funded]
    listed = value(calls, "intents.getAll")  # status=funded: any case, as the SDK's
    assert listed["data"] == [funded], listed
    skipped = calls["intents.getAll.offset"]  # we page by cursor: an offset is refused
    assert (skipped["ok"], skipped["status"]) == (False, 400), skipped
    assert json.loads(skipped["body"])["field"] == "offset"
    session = value(calls, "auth.getSessionToken")
    assert session["sessionToken"].startswith("itd_sess_")
    assert session["sessionId"].startswith("ses_") and session["expiresAt"].endswith("Z")
    assert session["amount"] == "2"
    assert session["token"]["address"] == SDK_ARBITRUM_USDC


def check_modal_calls(calls: dict[str, dict[str, Any]]) -> None:
    client = value(calls, "client.getClientInfoForSession")  # the session's own client only
    assert client == {
        "id": value(calls, "intents.create")["client_id"],
        "name": "sdk-shop",
        "networks": ["main", "test"],  # environment "test": a test key may use both
        "chains": ["ARBITRUM_TESTNET", "BASE_TESTNET"],
    }, client
    quotes = value(calls, "quotes.getAllForSession")["quotes"]
    assert quotes and {q["source_chain"] for q in quotes} == {"BASE_TESTNET"}, quotes
    paid = value(calls, "intents.createForSession")
    assert paid["session_id"].startswith("ses_")
    assert paid["metadata"] == {"session_id": paid["session_id"]}  # the payer's is dropped
    assert (paid["initialAmount"], paid["tokenOut"]) == ("2", SDK_ARBITRUM_USDC)
    assert value(calls, "intents.getForSession") == paid
    assert value(calls, "intents.triggerProcessingForSession")["intent"]["id"] == paid["id"]
    refused = calls["intents.getAll.withSessionToken"]
    assert (refused["ok"], refused["status"]) == (False, 401), refused
