"""``/api/v1/reports`` over real HTTP on real PostgreSQL: the exports' rows, the
reconciliation (and a corrupted record listed), the client's and mode's data only, CSV
injection, precise problems for bad ranges, and streams that free what they hold."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve
from tests.integration.api.events_support import (
    DUE,
    PAYEE,
    assert_problem,
    create,
    pay,
    usdc,
)
from tests.integration.api.reports_support import GAS_USED, PRICE, csv_rows, settle

from intentd.adapters.postgres import Pool
from intentd.api.reports.responses import ReconciliationReport
from intentd.reports.movements import COLUMNS
from intentd.settings import Settings

pytestmark = pytest.mark.integration


def window() -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "from": (now - timedelta(hours=1)).isoformat(),
        "to": (now + timedelta(hours=1)).isoformat(),
    }


async def reconciliation(api: Api, key: str, **params: str) -> dict[str, Any]:
    status, body, response = await api.call(
        "GET", "/reports/reconciliation", key, params={**window(), **params}
    )
    assert status == 200, body
    assert response.headers["Content-Type"].startswith("application/json")
    ReconciliationReport.model_validate(body)
    return body


async def paid_and_settled(api: Api, pool: Pool, key: str, paid: int) -> dict[str, Any]:
    record = await create(api, key, metadata={"order": "A-17"})
    await pay(api, pool, record, paid)
    await settle(api, pool, record["id"])
    return record


async def test_exports_have_one_row_per_movement_and_the_books_reconcile(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await paid_and_settled(api, pool, key, DUE + 2_000_000)  # 2 USDC too much
    address = record["intent_address"].lower()
    fees = DUE - 10_000_000

    status, deposits, headers = await csv_rows(api, key, "/reports/deposits", **window())
    assert status == 200 and headers["Content-Type"] == "text/csv; charset=utf-8"
    assert headers["Content-Disposition"].startswith('attachment; filename="deposits_')
    [deposit] = deposits
    assert list(deposit) == list(COLUMNS)
    assert (deposit["kind"], deposit["intent_id"], deposit["to_address"]) == (
        "deposit",
        str(record["id"]),
        address,
    )
    assert (deposit["amount_base_units"], deposit["amount"], deposit["symbol"]) == (
        str(DUE + 2_000_000),
        "12.115",
        "USDC",
    )
    assert (deposit["reason"], deposit["mode"]) == ("credited", "test")
    assert deposit["metadata"] == '{"order": "A-17"}'

    _, payments, _ = await csv_rows(api, key, "/reports/payments", **window())
    by_kind = {row["kind"]: row for row in payments}
    assert sorted(by_kind) == ["payment", "relayer_repayment"]
    paid = by_kind["payment"]
    assert (paid["chain"], paid["to_address"], paid["amount_base_units"]) == (
        "ARBITRUM_TESTNET",
        record["recipient"].lower(),
        "10000000",
    )
    assert paid["usd"] == "10.00" and paid["tx_hash"].startswith("0x")
    repaid = by_kind["relayer_repayment"]
    assert (repaid["from_address"], repaid["amount_base_units"]) == (address, str(DUE - fees))

    _, refunds, _ = await csv_rows(api, key, "/reports/refunds", **window())
    assert [(r["reason"], r["amount"], r["to_address"]) for r in refunds] == [
        ("excess", "2", record["refund_address"].lower())
    ]
    _, swept, _ = await csv_rows(api, key, "/reports/fees", **window())
    assert [(r["kind"], r["amount_base_units"]) for r in swept] == [("fee", str(fees))]
    _, gas, _ = await csv_rows(api, key, "/reports/gas", **window())
    kinds = sorted((r["kind"], r["reason"]) for r in gas)
    assert kinds == sorted(
        [("gas", f"{kind}:transfer") for kind in ("prefill", "relayer_refund", "fee_sweep")]
        + [("gas", "user_refund:transfer")]
        + [("gas", f"{kind}:gas_topup") for kind in ("relayer_refund", "fee_sweep", "user_refund")]
        + [("gas_topup", kind) for kind in ("relayer_refund", "fee_sweep", "user_refund")]
    )
    burned = next(r for r in gas if r["reason"] == "prefill:transfer")
    assert burned["amount_base_units"] == str(GAS_USED * PRICE) and burned["symbol"] == "ETH"
    assert (burned["gas_used"], burned["effective_gas_price"]) == (str(GAS_USED), str(PRICE))

    report = await reconciliation(api, key)
    assert report["mismatches"] == [] and report["reconciled"] is True
    assert (report["intents"], report["by_status"]) == (1, {"COMPLETED": 1})
    [total] = report["totals"]
    assert (total["received"], total["relayer_repaid"], total["fees_swept"]) == (
        str(DUE + 2_000_000),
        str(DUE - fees),
        str(fees),
    )
    assert (total["refunded"], total["retained"], total["held"]) == ("2000000", "0", "0")
    assert report["recipients"][0]["due"] == report["recipients"][0]["got"] == "10000000"

    # a refund recorded one base unit off is listed
    await pool.execute(
        "UPDATE actions SET amount = amount - 1 WHERE intent_id = $1 AND reason = 'excess'",
        record["id"],
    )
    report = await reconciliation(api, key)
    assert report["reconciled"] is False and report["intents_with_mismatches"] == 1
    found = {m["check"]: m for m in report["mismatches"]}
    assert set(found) == {"credit_refunds", "transaction"}
    assert (found["credit_refunds"]["expected"], found["credit_refunds"]["found"]) == (
        "2000000",
        "1999999",
    )
    assert found["transaction"]["intent_address"] == address
    _, lines, _ = await csv_rows(api, key, "/reports/reconciliation", format="csv", **window())
    assert [(r["intent_id"], r["balanced"], r["mismatches"]) for r in lines] == [
        (str(record["id"]), "yes", "credit_refunds transaction")
    ]


async def test_only_the_clients_and_the_modes_data(api: Api, pool: Pool, make_key: MakeKey) -> None:
    name = f"shop-{secrets.token_hex(3)}"
    key, other, live = (
        await make_key("test", client=name),
        await make_key("test"),
        await make_key("live", client=name),
    )
    await paid_and_settled(api, pool, key, DUE)
    assert len((await csv_rows(api, key, "/reports/payments", **window()))[1]) == 2
    for stranger in (other, live):  # another client; the same client's live key
        for path in ("/reports/payments", "/reports/deposits", "/reports/gas"):
            status, rows, _ = await csv_rows(api, stranger, path, **window())
            assert (status, rows) == (200, [])
        assert (await reconciliation(api, stranger))["intents"] == 0


@pytest.mark.parametrize(
    "case",
    [
        ({"from": "2026-11-01", "to": "2026-12-01T00:00:00Z"}, "invalid_time", "from"),
        ({"from": "2026-11-01T00:00:00Z", "to": "soon"}, "invalid_time", "to"),
        ({"from": "2026-12-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "range_reversed", "to"),
        ({"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "range_reversed", "to"),
        ({"from": "2025-01-01T00:00:00Z", "to": "2026-01-03T00:00:00Z"}, "range_too_long", "to"),
        ({"to": "2026-11-01T00:00:00Z"}, "validation_error", "from"),
    ],
)
@pytest.mark.parametrize("path", ["/reports/payments", "/reports/reconciliation"])
async def test_a_bad_range_is_a_precise_problem(
    api: Api, test_key: str, path: str, case: tuple[dict[str, str], str, str]
) -> None:
    params, code, field = case
    status, body, _ = await api.call("GET", path, test_key, params=params)
    assert_problem(status, body, 400, code, field)


async def test_an_unknown_export_and_no_key_are_refused(api: Api, test_key: str) -> None:
    status, body, _ = await api.call("GET", "/reports/salaries", test_key, params=window())
    assert (status, body["code"], body["field"]) == (400, "validation_error", "export")
    status, body, _ = await api.call("GET", "/reports/payments", None, params=window())
    assert (status, body["code"]) == (401, "missing_credentials")


@pytest.fixture
async def hostile_api(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
) -> AsyncIterator[Api]:
    """The API with BASE_TESTNET's USDC configured under the symbol ``=1+2``."""
    sections = api_sections(infra)
    tokens = sections["chains"]["BASE_TESTNET"]["tokens"]
    sections["chains"]["BASE_TESTNET"]["tokens"] = [{**tokens[0], "symbol": "=1+2"}, tokens[1]]
    settings = make_settings(**sections)
    async for url in serve(settings, pool):
        yield Api(url, settings, http)


async def test_a_cell_that_would_run_as_a_formula_is_escaped(
    api: Api, hostile_api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    body = {
        "amount": "10",
        "amountSymbol": "=1+2",
        "tokenIn": usdc(api),
        "source_chain": "BASE_TESTNET",
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": PAYEE,
        "refund_address": PAYEE,
        "metadata": {"x": "@A1"},
        "tokenOut": usdc(api, "ARBITRUM_TESTNET"),
    }
    status, record, _ = await hostile_api.call("POST", "/intents", key, body=body)
    assert status == 201, record
    await pay(api, pool, record, DUE)
    _, [row], _ = await csv_rows(hostile_api, key, "/reports/deposits", **window())
    assert row["symbol"] == "'=1+2"  # what a spreadsheet shows as text
    assert row["metadata"] == '{"x": "@A1"}'  # a JSON object: never a formula


async def test_a_large_export_streams_every_row_in_order(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    rows = await insert_deposits(api, pool, record, 3_000)
    status, found, _ = await csv_rows(api, key, "/reports/deposits", **window())
    assert status == 200 and len(found) == len({r["tx_hash"] for r in found}) == rows
    assert [r["tx_hash"] for r in found] == sorted(r["tx_hash"] for r in found)  # time order


async def test_a_client_that_leaves_mid_stream_frees_its_connection_and_slot(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    await insert_deposits(api, pool, record, 3_000)
    slots = max(1, api.settings.database.max_pool // 4)
    deadline = asyncio.get_running_loop().time() + 20
    left = 0
    while left < slots + 2:  # more than the slots: each must have been given back
        response = await api.http.get(
            f"{api.url}/api/v1/reports/deposits",
            headers={"Authorization": f"Bearer {key}"},
            params=window(),
        )
        if response.status == 200:
            await response.content.read(1000)
            left += 1
        else:  # the server has not seen an earlier client leave yet
            assert response.status == 503
            assert asyncio.get_running_loop().time() < deadline, "a slot was never given back"
            await asyncio.sleep(0.05)
        response.close()  # leave mid-stream
    while True:
        status, found, _ = await csv_rows(api, key, "/reports/deposits", **window())
        if status == 200:
            break
        assert asyncio.get_running_loop().time() < deadline, "a slot was never given back"
        await asyncio.sleep(0.05)
    assert len(found) == 3_000
    idle = await pool.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND state = 'idle in transaction'"
    )
    assert idle == 0


async def test_reports_beyond_the_processs_share_wait_their_turn(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    await insert_deposits(api, pool, record, 100_000)  # more than the sockets buffer
    slots = max(1, api.settings.database.max_pool // 4)
    held = []
    try:
        for _ in range(slots):  # each holds its slot while its body is not read
            response = await api.http.get(
                f"{api.url}/api/v1/reports/deposits",
                headers={"Authorization": f"Bearer {key}"},
                params=window(),
            )
            assert response.status == 200
            held.append(response)
        status, body, response = await api.call("GET", "/reports/deposits", key, params=window())
        assert_problem(status, body, 503, "reports_busy", None)
        assert response.headers["Retry-After"] == "5"
    finally:
        for response in held:
            response.close()


async def insert_deposits(api: Api, pool: Pool, record: dict[str, Any], count: int) -> int:
    """``count`` retained deposits of one base unit to the intent, seven a second."""
    start = datetime.now(UTC) - timedelta(minutes=30)
    token, prefix = usdc(api).lower(), secrets.token_hex(4)
    rows = [
        (
            "BASE_TESTNET",
            f"0x{prefix}{i:056x}",
            0,
            i,
            "0x" + "b" * 64,
            start + timedelta(seconds=i // 7),  # ties: pages continue by (time, id)
            token,
            "0x" + "2" * 40,
            record["intent_address"].lower(),
            1,
            record["id"],
            "retained",
            "late_deposit",
            i,
        )
        for i in range(count)
    ]
    await pool.copy_records_to_table(
        "deposits",
        records=rows,
        columns=[
            "chain",
            "tx_hash",
            "log_index",
            "block_number",
            "block_hash",
            "block_time",
            "token",
            "from_address",
            "to_address",
            "amount",
            "intent_id",
            "disposition",
            "reason",
            "transfer_index",
        ],
    )
    return count
