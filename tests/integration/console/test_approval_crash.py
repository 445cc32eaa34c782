"""A kill at the worst moment of an approval neither loses nor doubles the refund.

``intentd api`` runs as a user runs it, with a crash point armed
(``INTENTD_CRASH_AT``, ``intentd.faults``): the process dies with ``os._exit`` inside
the approval, either after the refund was decided and before the commit
(``approval.before_commit``), or after the commit and before the answer
(``approval.after_commit``). The approver's browser sees the connection drop; the API
is started again and the approver tries again: the refund is decided exactly once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey
from tests.integration.console.conftest import CONSOLE_KEY, Browser, Team
from tests.integration.console.test_refund_approval import (
    actions,
    approve,
    funded,
    threshold,
    waits,
)
from tests.support import daemon_env, start_daemon, until_serving, wait_exit

from intentd.access.roles import Role
from intentd.adapters.postgres import Pool
from intentd.faults import CRASH_EXIT_CODE
from intentd_dev.devinfra.anvil import free_port

pytestmark = pytest.mark.integration


async def api_process(console_api: Api, log: Path, crash: str | None) -> tuple[str, object]:
    port = free_port()
    env = daemon_env(
        console_api.settings,
        INTENTD__API__PORT=str(port),
        INTENTD__CONSOLE__SECURE_COOKIES="false",
        INTENTD_CONSOLE_KEY=CONSOLE_KEY,
    )
    env.pop("INTENTD_CRASH_AT", None)
    if crash is not None:
        env["INTENTD_CRASH_AT"] = crash
    process = start_daemon(["api"], env, log)
    url = f"http://127.0.0.1:{port}"
    await until_serving(process, f"{url}/console", log)
    return url, process


@pytest.mark.timeout(240)
@pytest.mark.parametrize("point", ["approval.before_commit", "approval.after_commit"])
async def test_a_kill_inside_an_approval_neither_loses_nor_doubles_the_refund(
    point: str,
    *,
    console_api: Api,
    pool: Pool,
    make_key: MakeKey,
    browsers: Callable[[], Browser],
    team: Team,
    tmp_path: Path,
) -> None:
    key = await make_key("test", client=team.client_name)
    record = await funded(console_api, pool, key)
    url, process = await api_process(console_api, tmp_path / "api-1.log", point)
    try:
        approver = browsers()
        approver.url = url
        assert (await approver.sign_in(team.emails[Role.OWNER]))[0] == 200
        await threshold(approver, "5")
        approval = (await waits(console_api, key, record, "refund"))["id"]
        with pytest.raises(aiohttp.ClientError):
            await approve(approver, approval)
        assert await wait_exit(process, 30) == CRASH_EXIT_CODE  # type: ignore[arg-type]
    finally:
        if process.poll() is None:  # type: ignore[attr-defined]
            process.kill()  # type: ignore[attr-defined]
    state = await pool.fetchval("SELECT status FROM refund_approvals WHERE id = $1::uuid", approval)
    refund = ("user_refund", 10_115_000, "merchant", "ready")
    if point == "approval.before_commit":
        assert state == "pending"  # nothing of the approval was kept ...
        assert await actions(pool, record["id"]) == [("prefill", 10_000_000, None, "ready")]
    else:
        assert state == "executed"  # ... or all of it
        assert (await actions(pool, record["id"]))[-1] == refund

    url, process = await api_process(console_api, tmp_path / "api-2.log", None)
    try:
        approver.url = url
        status, body = await approve(approver, approval)
        if point == "approval.before_commit":
            assert status == 200, body
        else:
            assert (status, body["code"]) == (409, "approval_not_pending")
    finally:
        process.terminate()  # type: ignore[attr-defined]
        await wait_exit(process, 30)  # type: ignore[arg-type]
    assert await actions(pool, record["id"]) == [
        ("prefill", 10_000_000, None, "cancelled"),
        refund,
    ]
    decided = await pool.fetchval(
        "SELECT count(*) FROM audit_log WHERE client_id = $1 AND action = 'approval.approve'"
        " AND result = 'ok'",
        team.client_id,
    )
    assert decided == 1
