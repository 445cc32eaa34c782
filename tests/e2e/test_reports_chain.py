"""The reports of real payments on the two anvil chains, end to end.

``intentd run`` (pollers, lifecycle, executors, API) as a user runs it; a merchant's
intents are created over HTTP and paid from the dev payer: one exactly, one with 2 USDC
too much, one partly and then cancelled; then a late deposit and a wrong-token deposit
reach the first. Once everything has settled, the exports are read over HTTP and
checked against the chains (each deposit's transfer, each transaction's gas from its
receipt, each recipient's balance), and the reconciliation finds no mismatch. Then one
recorded refund amount is put one base unit off, and the reconciliation lists it.

Fees: 1% application fee, swept to the fee account (config/local.toml's ``min_sweep`` is
0.01); amounts in USDC (6 decimals).
"""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.e2e.chain_run import DESTINATION, SOURCE, UNIT, five_usdc, running_on_chains
from tests.support import balance, send_payments

from intentd.adapters.postgres import Pool
from intentd.domain.amounts import format_amount
from intentd.settings import Settings

pytestmark = pytest.mark.e2e
TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


async def rows(http: aiohttp.ClientSession, url: str, **params: str) -> list[dict[str, str]]:
    async with http.get(url, params=params) as response:
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
        return list(csv.DictReader(io.StringIO((await response.read()).decode(), newline="")))


async def receipt(rpc: str, tx_hash: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "eth_getTransactionReceipt",
            "params": [tx_hash],
        }
        async with http.post(rpc, json=body) as response:
            found: dict[str, Any] = (await response.json())["result"]
            return found


@pytest.mark.timeout(420)
async def test_the_exports_match_the_chains_and_the_books_reconcile(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    rpc = {
        SOURCE: infra[f"INTENTD_{SOURCE}_RPC_URL"],
        DESTINATION: infra[f"INTENTD_{DESTINATION}_RPC_URL"],
    }
    usdc, usdt = infra[f"INTENTD_{SOURCE}_USDC"], infra[f"INTENTD_{SOURCE}_USDT"]
    usdc_dst = infra[f"INTENTD_{DESTINATION}_USDC"]
    payer_key = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
    fee_account = infra["INTENTD_FEE_ACCOUNT_ADDRESS"].lower()
    async with running_on_chains(
        settings,
        pool,
        tmp_path / "daemon.log",
        api=True,
        INTENTD__FEES__APP_FEE_BPS="100",
        INTENTD__CHAINS__BASE_TESTNET__EXPLORER_URL="https://sepolia.basescan.org",
    ) as run:
        key = run.shop_key("report-shop")
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {key}"}) as http:

            async def create(order: str) -> dict[str, Any]:
                body = five_usdc(usdc, metadata={"order": order})
                return await run.create_intent(http, body)

            exact, over, cancelled = (
                await create("exact"),
                await create("over"),
                await create("cancel"),
            )
            total = 5 * UNIT + 5 * UNIT // 100
            assert exact["total_amount_in_asset_token"] == "5.05"
            await asyncio.to_thread(
                send_payments,
                rpc[SOURCE],
                payer_key,
                [
                    (usdc, exact["intent_address"], total),
                    (usdc, over["intent_address"], total + 2 * UNIT),
                    (usdc, cancelled["intent_address"], 3 * UNIT),
                ],
            )
            await run.until_credited(cancelled, "the part payment")
            async with http.post(
                f"{run.api}/intents/{cancelled['intent_address']}/cancel"
            ) as answer:
                assert answer.status == 200
            for record in (exact, over):
                await run.until_status(record, "COMPLETED", timeout=90)
            await asyncio.to_thread(
                send_payments,
                rpc[SOURCE],
                payer_key,
                [(usdc, exact["intent_address"], UNIT), (usdt, exact["intent_address"], 2 * UNIT)],
            )
            await run.until(
                "SELECT count(*) = 2 FROM actions WHERE reason IN ('late_deposit', 'wrong_token')"
                " AND status = 'confirmed'",
                timeout=90,
                what="the late and wrong-token refunds",
            )
            await run.until(
                "SELECT count(*) = 0 FROM actions WHERE status IN ('ready', 'submitted', 'held')"
                " AND (SELECT status FROM intents WHERE id = $1) = 'REFUNDED'",
                cancelled["id"],
                timeout=90,
                what="every action settled",
            )

            now = datetime.now(UTC)
            period = {
                "from": (now - timedelta(hours=1)).isoformat(),
                "to": (now + timedelta(minutes=5)).isoformat(),
            }
            scene = {
                "exact": exact,
                "over": over,
                "cancelled": cancelled,
                "usdc": usdc,
                "usdt": usdt,
                "usdc_dst": usdc_dst,
                "total": total,
                "fee_account": fee_account,
            }
            await check_exports(http, run.api, period, rpc, scene)
            report = await reconciliation(http, run.api, period)
            assert report["mismatches"] == [], report["mismatches"]
            assert report["by_status"] == {"COMPLETED": 2, "REFUNDED": 1}
            totals = {(t["chain"], t["token"]): t for t in report["totals"]}
            line = totals[(SOURCE, usdc.lower())]
            assert line["received"] == str(2 * total + 2 * UNIT + 3 * UNIT + UNIT)
            assert line["relayer_repaid"] == str(2 * 5 * UNIT)
            assert line["fees_swept"] == str(2 * (total - 5 * UNIT))
            assert line["refunded"] == str(2 * UNIT + 3 * UNIT + UNIT)
            assert (line["retained"], line["held"], line["balanced"]) == ("0", "0", True)
            assert totals[(SOURCE, usdt.lower())]["refunded"] == str(2 * UNIT)
            [paid] = report["recipients"]
            assert (paid["token"], paid["due"], paid["got"]) == (
                usdc_dst.lower(),
                str(2 * 5 * UNIT),
                str(2 * 5 * UNIT),
            )

            # a recorded refund amount one base unit off is listed
            await pool.execute(
                "UPDATE actions SET amount = amount + 1 WHERE reason = 'late_deposit'"
            )
            report = await reconciliation(http, run.api, period)
            assert report["reconciled"] is False
            listed = {(m["intent_id"], m["check"]) for m in report["mismatches"]}
            assert listed == {(exact["id"], "deposit_refund"), (exact["id"], "transaction")}


async def reconciliation(
    http: aiohttp.ClientSession, api: str, period: dict[str, str]
) -> dict[str, Any]:
    async with http.get(f"{api}/reports/reconciliation", params=period) as response:
        assert response.status == 200, await response.text()
        found: dict[str, Any] = await response.json()
        return found


async def check_exports(
    http: aiohttp.ClientSession,
    api: str,
    period: dict[str, str],
    rpc: dict[str, str],
    scene: dict[str, Any],
) -> None:
    """Every row of every export against the chains."""
    exact, over, cancelled = scene["exact"], scene["over"], scene["cancelled"]
    usdc, usdt, usdc_dst = scene["usdc"].lower(), scene["usdt"].lower(), scene["usdc_dst"].lower()
    total, fee_account = scene["total"], scene["fee_account"]

    deposits = await rows(http, f"{api}/reports/deposits", **period)
    got = sorted(
        (r["intent_id"], r["token"], int(r["amount_base_units"]), r["reason"]) for r in deposits
    )
    assert got == sorted(
        [
            (str(exact["id"]), usdc, total, "credited"),
            (str(over["id"]), usdc, total + 2 * UNIT, "credited"),
            (str(cancelled["id"]), usdc, 3 * UNIT, "credited"),
            (str(exact["id"]), usdc, UNIT, "refund_owed:late_deposit"),
            (str(exact["id"]), usdt, 2 * UNIT, "refund_owed:wrong_token"),
        ]
    )
    for row in deposits:  # each is a Transfer of that amount to the intent address on chain
        found = await receipt(rpc[SOURCE], row["tx_hash"])
        logs = [
            log
            for log in found["logs"]
            if log["address"].lower() == row["token"] and log["topics"][0] == TRANSFER_TOPIC
        ]
        assert any(
            log["topics"][2][-40:] == row["to_address"][2:]
            and int(log["data"], 16) == int(row["amount_base_units"])
            for log in logs
        ), row
        assert row["explorer_url"] == f"https://sepolia.basescan.org/tx/{row['tx_hash']}"
        assert row["amount"] == format_amount(int(row["amount_base_units"]), 6)
    assert {r["metadata"] for r in deposits} >= {'{"order": "exact"}', '{"order": "cancel"}'}

    payments = await rows(http, f"{api}/reports/payments", **period)
    kinds = sorted((r["kind"], r["intent_id"], int(r["amount_base_units"])) for r in payments)
    assert kinds == sorted(
        [
            ("payment", str(exact["id"]), 5 * UNIT),
            ("payment", str(over["id"]), 5 * UNIT),
            ("relayer_repayment", str(exact["id"]), 5 * UNIT),
            ("relayer_repayment", str(over["id"]), 5 * UNIT),
        ]
    )
    for row in payments:
        if row["kind"] == "payment":
            assert (row["chain"], row["token"]) == (DESTINATION, usdc_dst)
            assert balance(rpc[DESTINATION], usdc_dst, row["to_address"]) == 5 * UNIT
            assert row["usd"] == "5.00"

    refunds = await rows(http, f"{api}/reports/refunds", **period)
    assert sorted(
        (r["reason"], r["token"], int(r["amount_base_units"])) for r in refunds
    ) == sorted(
        [
            ("excess", usdc, 2 * UNIT),
            ("cancelled", usdc, 3 * UNIT),
            ("late_deposit", usdc, UNIT),
            ("wrong_token", usdt, 2 * UNIT),
        ]
    )
    for row in refunds:
        assert balance(rpc[SOURCE], row["token"], row["to_address"]) == int(
            row["amount_base_units"]
        )

    fees = await rows(http, f"{api}/reports/fees", **period)
    assert (
        sorted((r["to_address"], int(r["amount_base_units"])) for r in fees)
        == [(fee_account, total - 5 * UNIT)] * 2
    )

    gas = await rows(http, f"{api}/reports/gas", **period)
    burned = [r for r in gas if r["kind"] == "gas"]
    # every transaction of ours: 2 prefills, and 2 repayments, 2 fee sweeps, 4 refunds
    # each with its gas top-up (or the tank's credit at the address: no top-up)
    assert len([r for r in burned if r["reason"].endswith(":transfer")]) == 10
    for row in burned:
        found = await receipt(rpc[row["chain"]], row["tx_hash"])
        cost = int(found["gasUsed"], 16) * int(found["effectiveGasPrice"], 16)
        assert int(row["amount_base_units"]) == cost, row
        assert row["from_address"] == found["from"].lower()
    for row in (r for r in gas if r["kind"] == "gas_topup"):
        found = await receipt(rpc[row["chain"]], row["tx_hash"])
        assert found["to"].lower() == row["to_address"] and found["status"] == "0x1"
