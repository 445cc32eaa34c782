"""``intentd run`` as a user runs it: real anvil chains, real payments, events on Kafka."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from tests.support import ROOT, TopicReader, daemon_env, json_values, start_daemon, wait_exit
from web3 import Web3

from intentd.adapters.postgres import Pool
from intentd.messages import events_topic
from intentd.settings import NATIVE_TOKEN, Settings

pytestmark = pytest.mark.e2e
TRANSFER_ABI = [
    {
        "name": "transfer",
        "type": "function",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    }
]


def pay(rpc_url: str, key: str, token: str, to: str, amount: int) -> None:
    w3 = Web3(Web3.HTTPProvider(rpc_url))
    account = Account.from_key(key)
    tx: dict[str, Any] = {
        "from": account.address,
        "chainId": w3.eth.chain_id,
        "nonce": w3.eth.get_transaction_count(account.address, "pending"),
        "maxFeePerGas": w3.eth.gas_price * 2 + 10**9,
        "maxPriorityFeePerGas": 10**9,
    }
    if token == NATIVE_TOKEN:
        tx.update(to=Web3.to_checksum_address(to), value=amount, gas=21_000)
    else:
        contract = w3.eth.contract(address=Web3.to_checksum_address(token), abi=TRANSFER_ABI)
        tx = contract.functions.transfer(Web3.to_checksum_address(to), amount).build_transaction(tx)
    receipt = w3.eth.wait_for_transaction_receipt(
        w3.eth.send_raw_transaction(account.sign_transaction(tx).raw_transaction), timeout=30
    )
    assert receipt["status"] == 1


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "intentd", "--config", str(ROOT / "config/local.toml"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    record: dict[str, Any] = json.loads(result.stdout)
    return record


@pytest.mark.timeout(240)
async def test_deposits_on_both_chains_reach_intent_funded(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    env = daemon_env(settings)
    log = tmp_path / "daemon.log"
    daemon = start_daemon(["run"], env, log)
    try:
        deadline = time.monotonic() + 60
        while await pool.fetchval("SELECT count(*) FROM chain_cursors") < len(settings.chains):
            assert daemon.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            await asyncio.sleep(0.2)

        payer_key = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
        payer = Account.from_key(payer_key).address
        usdc = infra["INTENTD_BASE_TESTNET_USDC"]
        common = ["--recipient", payer, "--refund-address", payer]
        erc20 = cli(
            env,
            "intents",
            "create",
            "--source-chain",
            "BASE_TESTNET",
            "--destination-chain",
            "ARBITRUM_TESTNET",
            "--token-in",
            usdc,
            "--amount",
            "25.5",
            "--metadata",
            '{"order": "e2e"}',
            *common,
        )
        native = cli(
            env,
            "intents",
            "create",
            "--source-chain",
            "ARBITRUM_TESTNET",
            "--destination-chain",
            "BASE_TESTNET",
            "--token-in",
            NATIVE_TOKEN,
            "--amount",
            "0.002",
            *common,
        )
        for record in (erc20, native):
            assert record["intent_status"] == "PENDING"
            assert record["tx_hash"] is None and record["needs_relay"] is False
        assert erc20["metadata"] == {"order": "e2e"}
        assert cli(env, "intents", "show", erc20["intent_address"])["id"] == erc20["id"]

        await asyncio.to_thread(
            pay,
            infra["INTENTD_BASE_TESTNET_RPC_URL"],
            payer_key,
            usdc,
            erc20["intent_address"],
            25_500_000,
        )
        await asyncio.to_thread(
            pay,
            infra["INTENTD_ARBITRUM_TESTNET_RPC_URL"],
            payer_key,
            NATIVE_TOKEN,
            native["intent_address"],
            3 * 10**15,
        )

        ids = {erc20["id"], native["id"]}
        async with TopicReader(
            settings.kafka.bootstrap_servers, events_topic(settings.kafka.topic_prefix)
        ) as events:
            await events.wait_for(
                lambda ms: (
                    ids
                    <= {e["intent"]["id"] for e in json_values(ms) if e["type"] == "intent_funded"}
                ),
                timeout=60,
            )
        by_id = {
            e["intent"]["id"]: e
            for e in json_values(events.messages)
            if e["type"] == "intent_funded"
        }
        assert by_id[erc20["id"]]["data"]["funding"]["status"] == "EXACT"
        assert by_id[erc20["id"]]["intent"]["intent_status"] == "FUNDED"
        assert by_id[erc20["id"]]["data"]["deposit"]["chain"] == "BASE_TESTNET"
        assert by_id[native["id"]]["data"]["funding"]["status"] == "OVERFUNDED"
        assert by_id[native["id"]]["data"]["funding"]["excess"] == "0.001"
        assert by_id[native["id"]]["data"]["deposit"]["log_index"] == -1
        shown = cli(env, "intents", "show", str(erc20["id"]))["intent_status"]
        assert shown in {"FUNDED", "INITIATED", "COMPLETED"}  # the executor may be quick
    finally:
        daemon.terminate()
        code = await wait_exit(daemon, 30)
    assert code == 0, log.read_text()[-5000:]
