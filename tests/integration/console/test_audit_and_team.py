"""The audit log (append-only, written with its change, filtered, exported, pruned by
retention only), the team's rules (the last owner stays), keys with scopes from the
console, and ``intentd users`` as an operator runs it."""

from __future__ import annotations

import csv
import io
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from tests.integration.api.conftest import Api
from tests.integration.api.events_support import until
from tests.integration.console.conftest import Browser, Team, signed_in
from tests.support import daemon_env, run_cli

from intentd.access.actors import Actor
from intentd.access.roles import Role
from intentd.adapters.postgres import (
    Pool,
    audit_log,
    console_overview,
    console_sessions,
    console_users,
)
from intentd.adapters.postgres.audit_log import AuditEntry

pytestmark = pytest.mark.integration


async def test_the_audit_log_refuses_updates_and_deletes_but_the_retention_pruning(
    pool: Pool, team: Team
) -> None:
    actor = Actor.cli(team.client_id)
    async with pool.acquire() as conn:
        old = await audit_log.record(conn, actor, AuditEntry("test.old", "thing", "1"))
        new = await audit_log.record(conn, actor, AuditEntry("test.new", "thing", "2"))
        with pytest.raises(asyncpg.RaiseError, match="append-only"):
            await conn.execute("UPDATE audit_log SET result = 'forged' WHERE id = $1", old)
        with pytest.raises(asyncpg.RaiseError, match="append-only"):
            await conn.execute("DELETE FROM audit_log WHERE id = $1", old)
        with pytest.raises(asyncpg.RaiseError, match="append-only"):
            await conn.execute("TRUNCATE audit_log")
        # the record of a change that rolls back is gone with it
        with pytest.raises(RuntimeError, match="the change failed"):
            await _record_then_fail(conn, actor)
        # pruning removes only what is past the retention
        await conn.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only")
        await conn.execute(
            "UPDATE audit_log SET at = now() - interval '500 days' WHERE id = $1", old
        )
        await conn.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only")
        pruned = 0
        while (step := await audit_log.prune(conn, older_than_days=400)) > 0:
            pruned += step
        assert pruned >= 1
        left = {
            r["action"]
            for r in await conn.fetch(
                "SELECT action FROM audit_log WHERE client_id = $1", team.client_id
            )
        }
    assert left == {"test.new"}
    assert new > old


async def _record_then_fail(conn: Any, actor: Actor) -> None:
    async with conn.transaction():
        await audit_log.record(conn, actor, AuditEntry("test.rolled_back", "thing", "3"))
        raise RuntimeError("the change failed")


async def test_the_audit_page_filters_and_the_export_equals_the_pages(
    browsers: Callable[[], Browser], team: Team, pool: Pool
) -> None:
    owner = await signed_in(browsers, team.emails[Role.OWNER])
    for value in ("10", "20"):
        await owner.call("PUT", "/policy", {"refund_approval_above_usd": value})

    async def both_listed() -> bool | None:
        # a record is listed once every transaction older than its own has ended (other
        # tests share the server): wait for that, not a fixed time
        status, found = await owner.call("GET", "/audit", params={"action": "policy"})
        return True if status == 200 and len(found["data"]) == 2 else None

    await until(both_listed)
    status, page = await owner.call("GET", "/audit", params={"action": "policy", "limit": "1"})
    assert status == 200, page
    assert [r["detail"]["refund_approval_above_usd"] for r in page["data"]] == ["20"]
    assert page["next_cursor"] is not None
    status, rest = await owner.call(
        "GET", "/audit", params={"action": "policy", "cursor": page["next_cursor"]}
    )
    assert [r["detail"]["refund_approval_above_usd"] for r in rest["data"]] == ["10"]
    assert rest["next_cursor"] is None
    # a value a spreadsheet would run as a formula is exported as text
    formula = Actor("cli", "cli", '=HYPERLINK("http://x")', team.client_id)
    async with pool.acquire() as conn:
        await audit_log.record(conn, formula, AuditEntry("test.formula", "thing", "1"))
    async with owner.session.get(
        f"{owner.url}/console/api/audit/export.csv", params={"action": "test"}
    ) as response:
        exported = list(csv.DictReader(io.StringIO(await response.text())))
    assert [r["actor_label"] for r in exported] == ['\'=HYPERLINK("http://x")']
    status, mine = await owner.call("GET", "/audit", params={"actor": team.emails[Role.OWNER]})
    assert {r["action"] for r in mine["data"]} == {"policy.refund_approval", "user.signin"}
    assert all(r["source"] == "127.0.0.1" for r in mine["data"])
    async with owner.session.get(
        f"{owner.url}/console/api/audit/export.csv", params={"actor": team.emails[Role.OWNER]}
    ) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/csv")
        assert "attachment" in response.headers["Content-Disposition"]
        text = await response.text()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert sorted(int(r["id"]) for r in rows) == sorted(r["id"] for r in mine["data"])
    viewer = await signed_in(browsers, team.emails[Role.VIEWER])
    assert (await viewer.call("GET", "/audit"))[0] == 403


async def test_the_client_keeps_an_active_owner(
    browsers: Callable[[], Browser], team: Team, pool: Pool
) -> None:
    owner = await signed_in(browsers, team.emails[Role.OWNER])
    status, members = await owner.call("GET", "/team")
    me = next(u for u in members["data"] if u["email"] == team.emails[Role.OWNER])
    status, body = await owner.call("PATCH", f"/team/{me['id']}", {"role": "admin"})
    assert (status, body["code"]) == (409, "last_owner")
    status, body = await owner.call("POST", f"/team/{me['id']}/disable")
    assert (status, body["code"]) == (409, "last_owner")
    admin = next(u for u in members["data"] if u["email"] == team.emails[Role.ADMIN])
    assert (await owner.call("PATCH", f"/team/{admin['id']}", {"role": "owner"}))[0] == 200
    assert (await owner.call("PATCH", f"/team/{me['id']}", {"role": "viewer"}))[0] == 200
    status, body = await owner.call("GET", "/team")  # a role change applies at once
    assert (status, body["code"]) == (403, "forbidden_for_role")


async def test_keys_with_scopes_from_the_console(
    console_api: Api, browsers: Callable[[], Browser], team: Team
) -> None:
    developer = await signed_in(browsers, team.emails[Role.DEVELOPER])
    status, made = await developer.call(
        "POST", "/keys", {"scopes": ["intents:read"]}, params={"mode": "test"}
    )
    assert status == 201, made
    assert made["scopes"] == ["intents:read"]
    secret = made["api_key"]
    status, body, _ = await console_api.call("GET", "/intents", secret)
    assert status == 200, body
    status, body, _ = await console_api.call(
        "POST", "/webhooks", secret, body={"url": "https://x.example"}
    )
    assert (status, body["code"]) == (403, "insufficient_scope")
    status, listed = await developer.call("GET", "/keys", params={"mode": "test"})
    assert [k["prefix"] for k in listed["data"]] == [made["prefix"]]
    assert "api_key" not in listed["data"][0]
    status, body = await developer.call("POST", f"/keys/{made['id']}/revoke")
    assert (status, body["revoked_at"] is not None) == (200, True)
    status, body = await developer.call(
        "POST", "/keys", {"scopes": ["refund"]}, params={"mode": "test"}
    )
    assert (status, body["code"]) == (422, "unknown_scope")


@pytest.mark.timeout(120)
async def test_users_from_the_command_line(
    console_api: Api, browsers: Callable[[], Browser], pool: Pool
) -> None:
    env = daemon_env(console_api.settings)
    name = f"cli-shop-{secrets.token_hex(3)}"
    run_cli(env, "clients", "create", name)
    email = f"boss@{name}.example"
    created = run_cli(env, "users", "create", "--client", name, "--email", email, "--role", "owner")
    assert created["role"] == "owner"
    assert created["has_password"] is False
    token = created["signin_link"].split("#link=")[1]
    browser = browsers()
    status, body = await browser.call(
        "POST", "/signin/link", {"token": token, "password": "the boss's passphrase"}
    )
    assert status == 200, body
    listed = run_cli(env, "users", "list", "--client", name)
    assert [u["email"] for u in listed] == [email]
    assert listed[0]["has_password"] is True
    second = f"clerk@{name}.example"
    run_cli(env, "users", "create", "--client", name, "--email", second, "--role", "support")
    clerk = run_cli(env, "users", "disable", second)
    assert clerk["active"] is False
    key = run_cli(
        env,
        "keys",
        "create",
        "--client",
        name,
        "--mode",
        "test",
        "--scope",
        "intents:read,events:read",
    )
    assert key["scopes"] == ["events:read", "intents:read"]
    actions = await pool.fetch(
        "SELECT actor_kind, action FROM audit_log a JOIN clients c ON c.id = a.client_id"
        " WHERE c.name = $1 ORDER BY a.id",
        name,
    )
    assert [(r["actor_kind"], r["action"]) for r in actions] == [
        ("cli", "user.create"),
        ("user", "user.password_set"),
        ("cli", "user.create"),
        ("cli", "user.disable"),
        ("cli", "key.create"),
    ]
    assert datetime.now(UTC)  # the CLI's links are valid for console.signin_link_hours


async def test_pruning_removes_only_what_no_one_reads_any_more(pool: Pool, team: Team) -> None:
    async with pool.acquire() as conn:
        user = await console_users.find_by_email(conn, team.emails[Role.VIEWER])
        assert user is not None
        for name, ends in (
            ("old", "now() - interval '8 days'"),
            ("live", "now() + interval '1 hour'"),
        ):
            await conn.execute(
                "INSERT INTO console_sessions (id_hash, user_id, kind, csrf_token, expires_at)"
                f" VALUES ($1, $2, 'session', 'x', {ends})",
                f"{name}-{team.client_id}",
                user[0].id,
            )
        for day in ("current_date - 61", "current_date - 20"):
            await conn.execute(
                "INSERT INTO console_day_totals (client_id, day, source_chain, symbol, decimals,"
                f" status, count, amount, usd) VALUES ($1, {day}, 'A', 'USDC', 6, 'COMPLETED',"
                " 1, 1, 1)",
                team.client_id,
            )
        assert await console_sessions.prune(conn) >= 1
        assert await console_overview.prune_day_totals(conn) >= 1
        sessions = await conn.fetch(
            "SELECT id_hash FROM console_sessions WHERE user_id = $1", user[0].id
        )
        days = await conn.fetchval(
            "SELECT count(*) FROM console_day_totals WHERE client_id = $1", team.client_id
        )
    assert [r["id_hash"] for r in sessions] == [f"live-{team.client_id}"]
    assert days == 1
