"""The relayer's float end to end: ``intentd run`` on the dev chains, its executors read
the relayer's balances and store them, its API admits by them (never reading RPC on a
request), and ``intentd status`` prints them (docs/execution.md, "The relayer's float")."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.support import PAYEE, daemon_env, start_daemon, wait_exit
from tests.support import run_cli as cli

from intentd.adapters.postgres import Pool
from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port

pytestmark = pytest.mark.e2e
DESTINATION = "ARBITRUM_TESTNET"
BALANCE_OF = "0x70a08231"


async def rpc(http: aiohttp.ClientSession, url: str, method: str, *params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
    async with http.post(url, json=body) as response:
        return (await response.json())["result"]


@pytest.mark.timeout(180)
async def test_the_executors_float_is_what_the_api_admits_by_and_status_prints(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    port = free_port()
    env = daemon_env(settings, INTENTD__API__PORT=str(port), INTENTD__LIQUIDITY__ADMISSION="true")
    log = tmp_path / "daemon.log"
    daemon = start_daemon(["run"], env, log)
    usdc = infra[f"INTENTD_{DESTINATION}_USDC"].lower()
    relayer = infra["INTENTD_RELAYER_ADDRESS"].lower()
    try:
        deadline = time.monotonic() + 90
        while await pool.fetchval("SELECT count(DISTINCT chain) FROM relayer_float") < 2:
            assert daemon.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            await asyncio.sleep(0.2)
        row = await pool.fetchrow(
            "SELECT * FROM relayer_float WHERE chain = $1 AND holder = 'relayer' AND token = $2",
            DESTINATION,
            usdc,
        )
        async with aiohttp.ClientSession() as http:
            held = await rpc(
                http, infra[f"INTENTD_{DESTINATION}_RPC_URL"], "eth_call",
                {"to": usdc, "data": BALANCE_OF + "00" * 12 + relayer[2:]},
                hex(row["block_number"]),
            )  # fmt: skip
            assert int(row["balance"]) == int(held, 16) > 0  # the relayer's, at that block
            assert row["address"] == relayer

            cli(env, "clients", "create", "float-shop", "--exist-ok")
            key = cli(env, "keys", "create", "--client", "float-shop", "--mode", "test")
            auth = {"Authorization": f"Bearer {key['api_key']}"}
            api = f"http://127.0.0.1:{port}/api/v1"
            multi = {"destinationChain": DESTINATION, "tokenOut": usdc, "amountSymbol": "USDC"}

            async def quotes(amount: str) -> tuple[int, Any]:
                params = {**multi, "amount": amount}
                async with http.get(f"{api}/quotes/multi-source", params=params, headers=auth) as r:
                    return r.status, await r.json(content_type=None)

            while (await quotes("1"))[0] != 200:  # the API's first load of the float
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                await asyncio.sleep(0.2)
            status, listed = await quotes("1")
            assert status == 200 and len(listed["quotes"]) >= 1
            status, listed = await quotes("1000000000000")  # far beyond the relayer's USDC
            assert (status, listed) == (200, {"quotes": []})

            body = {
                "amount": "1000000000000", "amountSymbol": "USDC", "tokenIn": infra[
                    "INTENTD_BASE_TESTNET_USDC"], "source_chain": "BASE_TESTNET",
                "destination_chain": DESTINATION, "recipient": PAYEE, "refund_address": PAYEE,
            }  # fmt: skip
            async with http.post(f"{api}/intents", json=body, headers=auth) as r:
                refused = await r.json(content_type=None)
                assert (r.status, refused["code"]) == (409, "insufficient_liquidity"), refused
            async with http.post(f"{api}/intents", json={**body, "amount": "3"}, headers=auth) as r:
                assert r.status == 201, await r.text()

        # the executor counts the new intent as pending at its next reading
        while True:
            rows = cli(env, "status", "--json")
            ours = [r for r in rows if (r["chain"], r["holder"], r["token"]) == (
                DESTINATION, "relayer", usdc)]  # fmt: skip
            if ours and int(ours[0]["pending"]) >= 3_000_000:
                break
            assert time.monotonic() < deadline, rows
            await asyncio.sleep(0.5)
        assert {(r["chain"], r["holder"]) for r in rows} >= {
            ("BASE_TESTNET", "relayer"), ("BASE_TESTNET", "gas_tank"),
            (DESTINATION, "relayer"), (DESTINATION, "gas_tank"),
        }  # fmt: skip
        assert not ours[0]["stale"] and int(ours[0]["cover"]) > 0
    finally:
        daemon.terminate()
        await wait_exit(daemon, 40)
