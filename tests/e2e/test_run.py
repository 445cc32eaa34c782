"""``intentd run`` as a user runs it: real anvil chains, real payments, events on Kafka."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from eth_account import Account
from tests.support import (
    TopicReader,
    daemon_env,
    json_values,
    send_payments,
    start_daemon,
    wait_exit,
)
from tests.support import run_cli as cli

from intentd.adapters.postgres import Pool
from intentd.messages import events_topic
from intentd.settings import NATIVE_TOKEN, Settings

pytestmark = pytest.mark.e2e


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
            send_payments,
            infra["INTENTD_BASE_TESTNET_RPC_URL"],
            payer_key,
            [(usdc, erc20["intent_address"], 25_500_000)],
        )
        await asyncio.to_thread(
            send_payments,
            infra["INTENTD_ARBITRUM_TESTNET_RPC_URL"],
            payer_key,
            [(NATIVE_TOKEN, native["intent_address"], 3 * 10**15)],
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
