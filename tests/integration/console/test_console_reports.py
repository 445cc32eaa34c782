"""The console's Reports over real HTTP on real PostgreSQL: the same exports and
reconciliation as the API's reports for a key of the same client and mode, the screen's
mode and the user's client only, every role with ``reports.read``, precise problems for
a bad range, and nothing written to the audit log by reading."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.integration.api.conftest import Api, MakeKey
from tests.integration.api.events_support import DUE, create, pay
from tests.integration.api.reports_support import csv_rows, settle
from tests.integration.console.conftest import Browser, Team, signed_in

from intentd.access.roles import Role
from intentd.adapters.postgres import Pool
from intentd.reports.movements import COLUMNS, Export

pytestmark = pytest.mark.integration


def window() -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "from": (now - timedelta(hours=1)).isoformat(),
        "to": (now + timedelta(hours=1)).isoformat(),
    }


async def console_csv(
    browser: Browser, path: str, **params: str
) -> tuple[int, list[dict[str, str]], Any]:
    async with browser.session.get(f"{browser.url}/console/api{path}", params=params) as response:
        body = await response.read()
        if response.status != 200:
            return response.status, [], body
        rows = list(csv.DictReader(io.StringIO(body.decode(), newline="")))
        return 200, rows, response.headers


async def test_the_pages_reports_equal_the_apis_for_the_same_client_and_mode(
    console_api: Api,
    browsers: Callable[[], Browser],
    team: Team,
    pool: Pool,
    make_key: MakeKey,
) -> None:
    key = await make_key("test", client=team.client_name)
    record = await create(console_api, key, metadata={"order": "=1+1"})
    await pay(console_api, pool, record, DUE + 2_000_000)  # 2 USDC too much: a refund
    await settle(console_api, pool, record["id"])
    audited = await pool.fetchval(
        "SELECT count(*) FROM audit_log WHERE client_id = $1", team.client_id
    )
    viewer = await signed_in(browsers, team.emails[Role.VIEWER])
    audited += 1  # its sign-in
    period = window()

    status, offer = await viewer.call("GET", "/reports", params={"mode": "test"})
    assert status == 200, offer
    assert offer["exports"] == [e.value for e in Export]
    assert offer["max_range_days"] == 366
    for export in Export:
        status, mine, headers = await console_csv(
            viewer, f"/reports/{export.value}", mode="test", **period
        )
        assert status == 200, mine
        assert headers["Content-Type"] == "text/csv; charset=utf-8"
        assert headers["Content-Disposition"].startswith(
            f'attachment; filename="{export.value}_test_'
        )
        assert headers["Cache-Control"] == "no-store"
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        status, theirs, _ = await csv_rows(console_api, key, f"/reports/{export.value}", **period)
        assert status == 200
        assert mine == theirs, export
        assert mine, export  # every kind moved money: the comparison compares something
        assert list(mine[0]) == list(COLUMNS)
        assert {r["intent_id"] for r in mine} == {str(record["id"])}

    status, report = await viewer.call(
        "GET", "/reports/reconciliation", params={"mode": "test", **period}
    )
    assert status == 200, report
    status, api_report, _ = await console_api.call(
        "GET", "/reports/reconciliation", key, params=period
    )
    assert status == 200
    assert report == api_report
    assert (report["reconciled"], report["intents"], report["mismatches"]) == (True, 1, [])
    status, rows, headers = await console_csv(
        viewer, "/reports/reconciliation", mode="test", format="csv", **period
    )
    assert status == 200
    assert headers["Content-Disposition"].startswith('attachment; filename="reconciliation_test_')
    assert {r["intent_id"] for r in rows} == {str(record["id"])}
    assert {r["mismatches"] for r in rows} == {""}

    # the live screen shows none of the test data, another client's user none of this one's
    status, live, _ = await console_csv(viewer, "/reports/deposits", mode="live", **period)
    assert (status, live) == (200, [])
    status, live_report = await viewer.call(
        "GET", "/reports/reconciliation", params={"mode": "live", **period}
    )
    assert (status, live_report["intents"]) == (200, 0)
    # reading reports changes nothing, and is not written to the audit log
    assert (
        await pool.fetchval("SELECT count(*) FROM audit_log WHERE client_id = $1", team.client_id)
        == audited
    )


async def test_every_role_reads_reports_and_a_stranger_nobodys(
    console_api: Api,
    browsers: Callable[[], Browser],
    team: Team,
    pool: Pool,
    make_key: MakeKey,
) -> None:
    key = await make_key("test", client=team.client_name)
    record = await create(console_api, key)
    await pay(console_api, pool, record, DUE)
    await settle(console_api, pool, record["id"])
    period = window()
    for role in Role:
        browser = await signed_in(browsers, team.emails[role])
        status, rows, _ = await console_csv(browser, "/reports/payments", mode="test", **period)
        assert status == 200, (role, rows)
        assert {r["intent_id"] for r in rows} == {str(record["id"])}, role
    stranger = browsers()
    status, body = await stranger.call(
        "GET", "/reports/reconciliation", params={"mode": "test", **period}
    )
    assert (status, body["code"]) == (401, "signed_out")


@pytest.mark.parametrize(
    "case",
    [
        ("2026-11-02T00:00:00Z", "2026-11-01T00:00:00Z", "range_reversed", "to"),
        ("2025-01-01T00:00:00Z", "2026-11-01T00:00:00Z", "range_too_long", "to"),
        ("2026-11-01", "2026-11-02T00:00:00Z", "invalid_time", "from"),
    ],
)
async def test_a_bad_range_is_a_precise_problem(
    browsers: Callable[[], Browser], team: Team, case: tuple[str, str, str, str]
) -> None:
    start, end, code, field = case
    viewer = await signed_in(browsers, team.emails[Role.VIEWER])
    for path in ("/reports/payments", "/reports/reconciliation"):
        status, body = await viewer.call(
            "GET", path, params={"mode": "test", "from": start, "to": end}
        )
        assert (status, body["code"], body["field"]) == (400, code, field), path
