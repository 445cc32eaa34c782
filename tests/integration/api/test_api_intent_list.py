"""``GET /api/v1/intents`` over real HTTP: every filter, the order, cursors (also while
intents are created, and when one commits late), client and mode scoping, and each
refusal's problem document."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.integration.api.conftest import Api, MakeKey
from tests.integration.api.events_support import (
    PAYEE,
    assert_problem,
    create,
    expire_now,
    pay,
    until,
    usdc,
)

from intentd.adapters.postgres import Pool
from intentd.api.intents.listing import IntentPage

pytestmark = pytest.mark.integration

SENDER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
OTHER = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"


async def page(api: Api, key: str, **params: Any) -> dict[str, Any]:
    status, body, _ = await api.call("GET", "/intents", key, params=params or None)
    assert status == 200, body
    IntentPage.model_validate(body)
    return body


async def ids(api: Api, key: str, **params: Any) -> list[int]:
    """Every intent id the list shows for ``params``, following cursors."""
    found: list[int] = []
    cursor = None
    while True:
        body = await page(api, key, **params, **({"cursor": cursor} if cursor else {}))
        found += [record["id"] for record in body["data"]]
        if not body["has_more"]:
            return found
        cursor = body["next_cursor"]


async def listed(api: Api, key: str, count: int, **params: Any) -> list[int]:
    """The list once it shows ``count`` intents (an intent shows once every older
    transaction has ended; the database is shared)."""

    async def check() -> list[int] | None:
        found = await ids(api, key, **params)
        return found if len(found) == count else None

    return await until(check)


async def test_newest_first_by_cursor_and_oldest_first(api: Api, make_key: MakeKey) -> None:
    key = await make_key("test")
    made = [(await create(api, key))["id"] for _ in range(5)]
    assert await listed(api, key, 5) == made[::-1]
    first = await page(api, key, limit=2)
    assert [r["id"] for r in first["data"]] == made[:-3:-1] and first["has_more"]
    assert await ids(api, key, limit=2) == made[::-1]
    assert await ids(api, key, limit=2, order="asc") == made
    last = await page(api, key, limit=100)
    assert not last["has_more"] and last["next_cursor"] is not None
    assert (await page(api, key, cursor=last["next_cursor"]))["data"] == []
    assert (await page(api, await make_key("test")))["data"] == []  # another client
    empty = await page(api, await make_key("test"))
    assert empty == {"data": [], "has_more": False, "next_cursor": None}


async def test_paging_is_stable_while_intents_are_created(api: Api, make_key: MakeKey) -> None:
    key = await make_key("test")
    before = [(await create(api, key))["id"] for _ in range(7)]
    await listed(api, key, 7)
    seen: list[int] = []
    cursor = None
    while True:
        body = await page(api, key, limit=3, **({"cursor": cursor} if cursor else {}))
        seen += [r["id"] for r in body["data"]]
        await create(api, key)  # a newer intent arrives at the head meanwhile
        if not body["has_more"]:
            break
        cursor = body["next_cursor"]
    assert seen == before[::-1]  # nothing repeated, nothing skipped
    forward = await ids(api, key, order="asc", limit=4)
    assert forward[:7] == before and len(set(forward)) == len(forward)


async def test_an_intent_committing_late_is_not_skipped(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    """An intent whose transaction began first but commits last (so an earlier
    created_at and, here, a smaller id) appears after every page already read, in
    both orders: a (created_at, id) cursor would have passed it for good."""
    key = await make_key("test")
    template = await create(api, key)
    await listed(api, key, 1)
    start_asc = (await page(api, key, order="asc"))["next_cursor"]
    top = await page(api, key)
    async with pool.acquire() as conn:
        slow = conn.transaction()
        await slow.start()
        try:
            late_id = await conn.fetchval(
                """INSERT INTO intents (client_id, request_hash, initial_amount, source_chain,
                     destination_chain, token_in, token_out, token_out_decimals,
                     asset_token_symbol, asset_token_decimals, total_due, amount_out,
                     address_index, intent_address, recipient, refund_address, status,
                     expires_at)
                   SELECT client_id, request_hash, initial_amount, source_chain,
                     destination_chain, token_in, token_out, token_out_decimals,
                     asset_token_symbol, asset_token_decimals, total_due, amount_out,
                     nextval('intent_address_index_seq'), $2, recipient, refund_address,
                     status, expires_at FROM intents WHERE id = $1 RETURNING id""",
                template["id"],
                "0x" + secrets.token_hex(20),
            )
            fast = await create(api, key)  # commits while the slow one is open
            assert fast["id"] > late_id
            await asyncio.sleep(0.3)
            # the fast intent waits for the older transaction: no page shows it yet
            assert [r["id"] for r in (await page(api, key))["data"]] == [template["id"]]
            assert (await page(api, key, order="asc", cursor=start_asc))["data"] == []
        finally:
            await slow.commit()
    newest = await listed(api, key, 3)
    assert newest == [fast["id"], late_id, template["id"]]
    after_top = await ids(api, key, cursor=top["next_cursor"])
    assert after_top == []  # nothing slipped below the cursor handed out before
    assert await ids(api, key, order="asc", cursor=start_asc) == [late_id, fast["id"]]


async def test_every_filter(api: Api, pool: Pool, make_key: MakeKey) -> None:
    key = await make_key("test")
    plain = await create(api, key)
    from_sender = await create(api, key, sender=SENDER, metadata={"order_id": "A-1"})
    to_other = await create(api, key, recipient=OTHER, metadata={"order_id": "A-2", "n": 2})
    reverse = await create(
        api,
        key,
        source_chain="ARBITRUM_TESTNET",
        destination_chain="BASE_TESTNET",
        tokenIn=usdc(api, "ARBITRUM_TESTNET"),
    )
    expired = await create(api, key)
    await expire_now(api, pool, expired["id"])
    partly = await create(api, key)
    await pay(api, pool, partly, 1_000_000)
    await pool.execute("UPDATE intents SET session_id = 'sess-1' WHERE id = $1", plain["id"])
    every = await listed(api, key, 6)

    async def only(**params: Any) -> list[int]:
        return await ids(api, key, **params)

    assert await only(status="EXPIRED") == [expired["id"]]
    assert set(await only(status="PENDING")) == set(every) - {expired["id"]}
    assert await only(funding_status="UNDERFUNDED") == [partly["id"]]
    assert await only(source_chain="ARBITRUM_TESTNET") == [reverse["id"]]
    assert await only(destination_chain="BASE_TESTNET") == [reverse["id"]]
    assert await only(sender=SENDER) == [from_sender["id"]]
    assert await only(sender=SENDER.lower()) == [from_sender["id"]]
    assert await only(recipient=OTHER) == [to_other["id"]]
    assert len(await only(recipient=PAYEE)) == 5
    assert await only(session_id="sess-1") == [plain["id"]]
    assert await only(metadata_key="order_id", metadata_value="A-2") == [to_other["id"]]
    assert await only(metadata_key="order_id", metadata_value="A-3") == []
    assert await only(metadata_key="n", metadata_value="2") == []  # strings only
    assert await only(status="PENDING", sender=SENDER) == [from_sender["id"]]
    created = datetime.fromisoformat(plain["created_at"])
    assert await only(created_after=_iso(created + timedelta(hours=1))) == []
    assert await only(created_before=_iso(created)) == []
    window = {"created_after": _iso(created), "created_before": _iso(created + timedelta(hours=1))}
    assert sorted(await only(**window)) == sorted(every)


async def test_mode_scoping(api: Api, production_api: Api, make_key: MakeKey) -> None:
    """A live key of the same client sees none of its test intents, and may not filter
    by a test chain; a test key may not filter by a main-network chain (in production)."""
    client = f"scoped-{secrets.token_hex(3)}"
    test_key = await make_key("test", client=client)
    live_key = await make_key("live", client=client)
    await create(api, test_key)
    await listed(api, test_key, 1)
    assert (await page(api, live_key))["data"] == []
    status, body, _ = await api.call(
        "GET", "/intents", live_key, params={"source_chain": "BASE_TESTNET"}
    )
    assert_problem(status, body, 403, "network_class_mismatch", "source_chain")
    status, body, _ = await production_api.call(
        "GET", "/intents", test_key, params={"destination_chain": "BASE"}
    )
    assert_problem(status, body, 403, "network_class_mismatch", "destination_chain")


@pytest.mark.parametrize(
    "case",
    [
        ("cursor=abc", 400, "invalid_cursor", "cursor"),
        ("cursor=bDoxOjI", 400, "invalid_cursor", "cursor"),  # an event log cursor
        ("status=LOST", 400, "validation_error", "status"),
        ("funding_status=SOME", 400, "validation_error", "funding_status"),
        ("order=sideways", 400, "validation_error", "order"),
        ("limit=0", 400, "validation_error", "limit"),
        ("limit=101", 400, "validation_error", "limit"),
        ("limit=5&limit=6", 422, "repeated_parameter", "limit"),
        ("status=PENDING&status=EXPIRED", 422, "repeated_parameter", "status"),
        ("source_chain=MOON", 422, "unknown_chain", "source_chain"),
        ("destination_chain=MOON", 422, "unknown_chain", "destination_chain"),
        ("sender=0x123", 422, "invalid_address", "sender"),
        ("recipient=bob", 422, "invalid_address", "recipient"),
        ("metadata_key=order_id", 422, "incomplete_metadata_filter", "metadata_value"),
        ("metadata_value=x", 422, "incomplete_metadata_filter", "metadata_key"),
        ("created_after=yesterday", 400, "invalid_time", "created_after"),
        ("created_before=2026-11-23T10:00:00", 400, "invalid_time", "created_before"),
    ],
)
async def test_refusals(api: Api, test_key: str, case: tuple[str, int, str, str]) -> None:
    query, expected, code, field = case
    status, body, response = await api.call("GET", f"/intents?{query}", test_key)
    assert_problem(status, body, expected, code, field)
    assert response.content_type == "application/problem+json"


async def test_needs_an_api_key(api: Api) -> None:
    status, body, _ = await api.call("GET", "/intents", None)
    assert status == 401 and body["code"] == "missing_credentials"


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


async def test_another_method_is_405_naming_both(api: Api, test_key: str) -> None:
    status, body, response = await api.call("DELETE", "/intents", test_key)
    assert (status, body["code"]) == (405, "method_not_allowed")
    assert response.headers["Allow"] == "GET, POST"
