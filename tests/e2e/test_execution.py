"""Every execution scenario of issue 3, end to end on the two anvil chains.

``intentd run`` runs as a user runs it (pollers, lifecycle, executors); the test pays
intents from the dev payer and checks what happened on chain: the recipient, the
relayer, the fee account and the refund addresses, to the base unit.

Fees: 1% application fee (so the fee sweep is exercised); amounts in USDC (6 decimals).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from tests.e2e.chain_run import DESTINATION, SOURCE, UNIT, running_on_chains
from tests.support import TopicReader, balance, json_values, send_payments
from tests.support import (
    run_cli as cli,
)

from intentd.adapters.postgres import Pool
from intentd.messages import events_topic
from intentd.settings import Settings
from intentd_dev.devinfra.contracts import deploy_token, mint

pytestmark = pytest.mark.e2e
AMOUNT = 5 * UNIT  # what the recipient gets
FEE = AMOUNT // 100  # 1% application fee
TOTAL = AMOUNT + FEE


def fresh_address() -> str:
    return str(Account.create().address)


async def status(pool: Pool, intent_id: int) -> str:
    value: str = await pool.fetchval("SELECT status FROM intents WHERE id = $1", intent_id)
    return value


async def all_actions_settled(pool: Pool) -> bool:
    return bool(
        await pool.fetchval(
            "SELECT count(*) = 0 FROM actions WHERE status IN ('ready', 'submitted')"
        )
    )


@pytest.mark.timeout(420)
async def test_every_scenario_moves_the_right_money(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    src_rpc = infra[f"INTENTD_{SOURCE}_RPC_URL"]
    dst_rpc = infra[f"INTENTD_{DESTINATION}_RPC_URL"]
    usdc_src, usdt_src = infra[f"INTENTD_{SOURCE}_USDC"], infra[f"INTENTD_{SOURCE}_USDT"]
    usdc_dst = infra[f"INTENTD_{DESTINATION}_USDC"]
    payer_key = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
    deployer_key = Path(infra["INTENTD_DEV_DEPLOYER_KEY_FILE"]).read_text().strip()
    relayer, fee_account = infra["INTENTD_RELAYER_ADDRESS"], infra["INTENTD_FEE_ACCOUNT_ADDRESS"]
    payer = Account.from_key(payer_key).address
    rogue = await asyncio.to_thread(deploy_token, src_rpc, deployer_key, "Rogue", "USDC", 6)
    await asyncio.to_thread(mint, src_rpc, deployer_key, rogue, payer, 100 * UNIT)

    before = {
        "relayer_src": balance(src_rpc, usdc_src, relayer),
        "relayer_dst": balance(dst_rpc, usdc_dst, relayer),
        "fee_account": balance(src_rpc, usdc_src, fee_account),
    }
    async with running_on_chains(
        settings,
        pool,
        tmp_path / "daemon.log",
        INTENTD__FEES__APP_FEE_BPS="100",
        INTENTD__INTENTS__MIN_EXPIRES_IN="1",
    ) as run:

        def create(name: str, *, expires_in: int = 3600) -> dict[str, Any]:
            return cli(
                run.env,
                "intents",
                "create",
                "--source-chain",
                SOURCE,
                "--destination-chain",
                DESTINATION,
                "--token-in",
                usdc_src,
                "--amount",
                "5",
                "--recipient",
                fresh_address(),
                "--refund-address",
                fresh_address(),
                "--expires-in",
                str(expires_in),
                "--metadata",
                f'{{"scenario": "{name}"}}',
            )

        exact, over, topped = create("exact"), create("over"), create("top-up")
        under_expired = create("under-expiry", expires_in=30)
        nothing = create("nothing-expiry", expires_in=3)
        wrong, fake = create("wrong-token"), create("rogue-token")
        assert exact["total_amount_in_asset_token"] == "5.05"
        await asyncio.to_thread(
            send_payments,
            src_rpc,
            payer_key,
            [
                (usdc_src, exact["intent_address"], TOTAL),
                (usdc_src, over["intent_address"], TOTAL + 2 * UNIT),
                (usdc_src, topped["intent_address"], 3 * UNIT),
                (usdc_src, under_expired["intent_address"], 3 * UNIT),
                (usdt_src, wrong["intent_address"], 2 * UNIT),
                (rogue, fake["intent_address"], 5 * UNIT),
            ],
        )
        await run.until_credited(topped, "the first part of the top-up")
        await asyncio.to_thread(
            send_payments,
            src_rpc,
            payer_key,
            [
                (usdc_src, topped["intent_address"], TOTAL - 3 * UNIT),
            ],
        )
        for record in (exact, over, topped):
            await run.until_status(record, "COMPLETED", timeout=90)
        # a late deposit to a completed intent is refunded
        await asyncio.to_thread(
            send_payments,
            src_rpc,
            payer_key,
            [
                (usdc_src, exact["intent_address"], 1 * UNIT),
            ],
        )
        await run.until_status(under_expired, "REFUNDED", timeout=90)
        await run.until(
            "SELECT count(*) = 1 FROM actions WHERE reason = 'late_deposit'"
            " AND status = 'confirmed'",
            timeout=90,
            what="the late-deposit refund",
        )
        await run.until(
            "SELECT count(*) = 0 FROM actions WHERE status IN ('ready', 'submitted')",
            timeout=90,
            what="every action settled",
        )

        assert await status(pool, nothing["id"]) == "EXPIRED"
        assert await status(pool, wrong["id"]) == "PENDING"
        assert await status(pool, fake["id"]) == "PENDING"
        failed = await pool.fetchval("SELECT count(*) FROM actions WHERE status = 'failed'")
        assert failed == 0

        def usdc(address: str, rpc: str = src_rpc, token: str = usdc_src) -> int:
            return balance(rpc, token, address)

        # recipients got exactly the promised amount on the destination chain
        for record in (exact, over, topped):
            assert usdc(record["recipient"], dst_rpc, usdc_dst) == AMOUNT
        for record in (under_expired, nothing, wrong, fake):
            assert usdc(record["recipient"], dst_rpc, usdc_dst) == 0
        # refunds, to the base unit
        assert usdc(exact["refund_address"]) == 1 * UNIT  # late deposit
        assert usdc(over["refund_address"]) == 2 * UNIT  # excess
        assert usdc(topped["refund_address"]) == 0
        assert usdc(under_expired["refund_address"]) == 3 * UNIT  # expiry
        assert balance(src_rpc, usdt_src, wrong["refund_address"]) == 2 * UNIT  # wrong token
        # the rogue token is ignored: nothing moved, it stays at the intent address
        assert balance(src_rpc, rogue, fake["intent_address"]) == 5 * UNIT
        assert balance(src_rpc, rogue, fake["refund_address"]) == 0
        # every intent address is swept clean of the supported tokens
        for record in (exact, over, topped, under_expired, wrong):
            assert usdc(record["intent_address"]) == 0
            assert balance(src_rpc, usdt_src, record["intent_address"]) == 0
        # the relayer paid 3 prefills and was repaid 3 totals less fees; fees to the fee account
        assert usdc(relayer, dst_rpc, usdc_dst) == before["relayer_dst"] - 3 * AMOUNT
        assert usdc(relayer) == before["relayer_src"] + 3 * AMOUNT
        assert usdc(fee_account) == before["fee_account"] + 3 * FEE

        async with TopicReader(
            settings.kafka.bootstrap_servers, events_topic(settings.kafka.topic_prefix)
        ) as reader:
            await reader.wait_for(lambda ms: len(ms) >= 15, timeout=30)
            await reader.drain(1.0)
        kinds: dict[int, list[str]] = {}
        reasons: dict[int, list[str]] = {}
        for event in json_values(reader.messages):
            kinds.setdefault(event["intent"]["id"], []).append(event["type"])
            if event["type"] == "intent_refunded":
                reasons.setdefault(event["intent"]["id"], []).append(
                    event["data"]["refund"]["reason"]
                )
        done = ["intent_initiated", "intent_completed"]
        assert kinds[exact["id"]][:3] == ["intent_funded", *done]
        assert reasons[exact["id"]] == ["late_deposit"]
        assert reasons[over["id"]] == ["excess"]
        assert kinds[topped["id"]] == ["intent_funded", "intent_funded", *done]
        assert kinds[under_expired["id"]] == ["intent_funded", "intent_refunded"]
        assert reasons[under_expired["id"]] == ["expired"]
        assert reasons[wrong["id"]] == ["wrong_token"]
        assert kinds[nothing["id"]] == ["intent_expired"]  # its one, terminal, event
        assert fake["id"] not in kinds
