"""Refund approval over real HTTP and PostgreSQL: above the client's threshold a refund
(or a cancel that refunds) by a key or a user waits for a second user; the requester
cannot approve its own; an approval executes once, never after it expired, never for
more than was approved; every step is in the audit log."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from tests.integration.api.conftest import Api, MakeKey
from tests.integration.api.events_support import DUE, create, pay
from tests.integration.console.conftest import Browser, Team, signed_in

from intentd.access.roles import Role
from intentd.adapters.postgres import Pool

pytestmark = pytest.mark.integration


async def actions(pool: Pool, intent_id: int) -> list[tuple[str, int, str | None, str]]:
    rows = await pool.fetch(
        "SELECT kind, amount, reason, status FROM actions WHERE intent_id = $1 ORDER BY id",
        intent_id,
    )
    return [(r["kind"], int(r["amount"]), r["reason"], r["status"]) for r in rows]


async def audit(pool: Pool, team: Team) -> list[tuple[str, str, str]]:
    rows = await pool.fetch(
        "SELECT actor_kind, action, result FROM audit_log WHERE client_id = $1"
        " AND action NOT LIKE 'user.%' AND action <> 'policy.refund_approval' ORDER BY id",
        team.client_id,
    )
    return [(r["actor_kind"], r["action"], r["result"]) for r in rows]


async def funded(console_api: Api, pool: Pool, key: str, amount: int = DUE) -> dict[str, Any]:
    record = await create(console_api, key)
    await pay(console_api, pool, record, amount)
    return record


async def key_and_owner(
    make_key: MakeKey, browsers: Callable[[], Browser], team: Team, usd: str
) -> tuple[str, Browser]:
    """A test key of the team's client, and its owner signed in, having set refunds
    above ``usd`` to wait for approval."""
    key = await make_key("test", client=team.client_name)
    owner = await signed_in(browsers, team.emails[Role.OWNER])
    await threshold(owner, usd)
    return key, owner


async def threshold(owner: Browser, usd: str | None) -> None:
    """Refunds above ``usd`` wait for approval (``None``: none waits)."""
    status, body = await owner.call("PUT", "/policy", {"refund_approval_above_usd": usd})
    assert status == 200, body


async def waits(console_api: Api, key: str, record: dict[str, Any], command: str) -> dict[str, Any]:
    """``command`` (refund, cancel) asked by ``key``: it waits; the approval."""
    status, body, _ = await console_api.call(
        "POST", f"/intents/{record['intent_address']}/{command}", key
    )
    assert status == 202, body
    return dict(body["approval"])


async def approve(by: Browser, approval: str) -> tuple[int, Any]:
    return await by.call("POST", f"/approvals/{approval}/approve")


async def approval_status(console_api: Api, key: str, approval: str) -> tuple[int, str]:
    status, read, _ = await console_api.call("GET", f"/refund-approvals/{approval}", key)
    return status, read["status"]


async def confirm(
    by: Browser, record: dict[str, Any], command: str, refund_base_units: str
) -> tuple[int, Any]:
    """``command`` (refund, cancel) of ``record``'s payment in the console, confirming
    the amount it refunds."""
    return await by.call(
        "POST",
        f"/payments/{record['id']}/{command}",
        {"refund_base_units": refund_base_units},
        params={"mode": "test"},
    )


async def payment(by: Browser, record: dict[str, Any]) -> dict[str, Any]:
    """The console's detail of ``record``'s payment."""
    status, detail = await by.call("GET", f"/payments/{record['id']}", params={"mode": "test"})
    assert status == 200, detail
    return dict(detail)


async def test_a_keys_refund_above_the_threshold_waits_for_an_owner_and_runs_once(
    console_api: Api, pool: Pool, make_key: MakeKey, browsers: Callable[[], Browser], team: Team
) -> None:
    key, owner = await key_and_owner(make_key, browsers, team, "5")
    record = await funded(console_api, pool, key)
    approval = await waits(console_api, key, record, "refund")
    assert (approval["status"], approval["command"], approval["amount"]) == (
        "pending",
        "refund",
        "10.115",
    )
    assert approval["requested_by"].startswith("itd_test_")
    # nothing refunded: the prefill still waits
    assert await actions(pool, record["id"]) == [("prefill", 10_000_000, None, "ready")]
    assert (await waits(console_api, key, record, "refund"))["id"] == approval["id"]
    assert await approval_status(console_api, key, approval["id"]) == (200, "pending")

    status, body = await approve(owner, approval["id"])
    assert status == 200, body
    assert body["approval"]["status"] == "executed"
    assert body["approval"]["decided_by"] == team.emails[Role.OWNER]
    assert body["record"]["intent_status"] == "REFUNDING"
    refunded = [
        ("prefill", 10_000_000, None, "cancelled"),
        ("user_refund", DUE, "merchant", "ready"),
    ]
    assert await actions(pool, record["id"]) == refunded
    status, body = await approve(owner, approval["id"])
    assert (status, body["code"]) == (409, "approval_not_pending")
    assert await actions(pool, record["id"]) == refunded
    assert (await approval_status(console_api, key, approval["id"]))[1] == "executed"
    assert await audit(pool, team) == [
        ("key", "intent.refund", "pending"),
        ("user", "approval.approve", "ok"),
        ("user", "approval.approve", "denied"),
    ]


async def test_support_refunds_below_the_threshold_at_once(
    console_api: Api, pool: Pool, make_key: MakeKey, browsers: Callable[[], Browser], team: Team
) -> None:
    key, _ = await key_and_owner(make_key, browsers, team, "50")
    record = await funded(console_api, pool, key)
    support = await signed_in(browsers, team.emails[Role.SUPPORT])
    offer = (await payment(support, record))["commands"]["refund"]
    assert (offer["allowed"], offer["needs_approval"], offer["refund_amount"]) == (
        True,
        False,
        "10.115",
    )
    status, body = await confirm(support, record, "refund", offer["refund_base_units"])
    assert status == 200, body
    assert body["record"]["intent_status"] == "REFUNDING"
    assert await audit(pool, team) == [("user", "intent.refund", "ok")]


async def test_an_admins_refund_above_it_waits_and_the_admin_cannot_approve_it(
    console_api: Api, pool: Pool, make_key: MakeKey, browsers: Callable[[], Browser], team: Team
) -> None:
    key, owner = await key_and_owner(make_key, browsers, team, "5")
    record = await create(console_api, key)
    await pay(console_api, pool, record, 7_000_000)  # partly paid: a cancel refunds 7 USDC
    admin = await signed_in(browsers, team.emails[Role.ADMIN])
    offer = (await payment(admin, record))["commands"]["cancel"]
    assert (offer["needs_approval"], offer["refund_amount"]) == (True, "7")
    # a stale confirmation (another amount than the intent holds) changes nothing
    status, body = await confirm(admin, record, "cancel", "6999999")
    assert (status, body["code"]) == (409, "amount_changed")
    status, body = await confirm(admin, record, "cancel", offer["refund_base_units"])
    assert status == 202, body
    approval = body["approval"]
    assert await actions(pool, record["id"]) == []
    status, body = await approve(admin, approval["id"])
    assert (status, body["code"]) == (403, "approval_own_request")
    support = await signed_in(browsers, team.emails[Role.SUPPORT])
    status, body = await approve(support, approval["id"])
    assert (status, body["code"]) == (403, "forbidden_for_role")
    status, body = await approve(owner, approval["id"])
    assert status == 200, body
    assert await actions(pool, record["id"]) == [("user_refund", 7_000_000, "cancelled", "ready")]


async def test_an_expired_approval_is_never_executed(
    console_api: Api, pool: Pool, make_key: MakeKey, browsers: Callable[[], Browser], team: Team
) -> None:
    key, owner = await key_and_owner(make_key, browsers, team, "5")
    record = await funded(console_api, pool, key)
    approval = (await waits(console_api, key, record, "refund"))["id"]
    await pool.execute(
        "UPDATE refund_approvals SET expires_at = now() - interval '1 second' WHERE id = $1::uuid",
        approval,
    )
    status, body = await approve(owner, approval)
    assert (status, body["code"]) in ((409, "approval_expired"), (409, "approval_not_pending"))
    assert await actions(pool, record["id"]) == [("prefill", 10_000_000, None, "ready")]
    assert (await approval_status(console_api, key, approval))[1] == "expired"
    # asked again, it waits again (a new approval)
    again = await waits(console_api, key, record, "refund")
    assert again["status"] == "pending"
    assert again["id"] != approval


async def test_a_payment_credited_after_the_request_is_asked_for_again(
    console_api: Api, pool: Pool, make_key: MakeKey, browsers: Callable[[], Browser], team: Team
) -> None:
    key, owner = await key_and_owner(make_key, browsers, team, "1")
    record = await create(console_api, key)
    await pay(console_api, pool, record, 2_000_000)
    approval = (await waits(console_api, key, record, "cancel"))["id"]
    await pay(console_api, pool, record, 3_000_000)  # still PENDING, now holding 5 USDC
    status, body = await approve(owner, approval)
    assert (status, body["code"]) == (409, "approval_amount_changed")
    assert "5 USDC" in body["detail"]
    assert await actions(pool, record["id"]) == []
    assert (await approval_status(console_api, key, approval))[1] == "failed"


async def test_two_approvers_at_once_execute_it_once(
    console_api: Api, pool: Pool, make_key: MakeKey, browsers: Callable[[], Browser], team: Team
) -> None:
    key, owner = await key_and_owner(make_key, browsers, team, "5")
    admin = await signed_in(browsers, team.emails[Role.ADMIN])
    record = await funded(console_api, pool, key)
    approval = (await waits(console_api, key, record, "refund"))["id"]
    answers = await asyncio.gather(*(approve(b, approval) for b in (owner, admin, owner, admin)))
    assert sorted(status for status, _ in answers) == [200, 409, 409, 409], answers
    assert await actions(pool, record["id"]) == [
        ("prefill", 10_000_000, None, "cancelled"),
        ("user_refund", DUE, "merchant", "ready"),
    ]


async def test_without_a_threshold_nothing_waits(
    console_api: Api, pool: Pool, make_key: MakeKey, team: Team
) -> None:
    key = await make_key("test", client=team.client_name)
    record = await funded(console_api, pool, key)
    status, body, _ = await console_api.call(
        "POST", f"/intents/{record['intent_address']}/refund", key
    )
    assert (status, body["intent_status"]) == (200, "REFUNDING")
