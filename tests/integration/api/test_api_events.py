"""The event log over HTTP: ``GET /events`` and ``GET /intents/{id}/events`` against
real PostgreSQL, fed by the lifecycle's own handlers (deposits, expiry)."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import orjson
import pytest
from tests.integration.api.conftest import Api, MakeKey

from intentd.adapters import intent_store
from intentd.adapters.event_log import LogPosition
from intentd.adapters.postgres import Pool
from intentd.api.event_params import encode_log_cursor, encode_sequence_cursor
from intentd.api.models import Problem
from intentd.api.routes_events import EventPage
from intentd.domain.events import is_terminal
from intentd.lifecycle.expiry import Expiry
from intentd.lifecycle.handlers import Outcome, apply_deposit, expire
from intentd.messages import DepositMessage, deposit_id

pytestmark = pytest.mark.integration

PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
CHAIN = "BASE_TESTNET"
DUE = 10_115_000
"""Base units of USDC an intent of 10 USDC owes with the test fees (10.115)."""
_T = TypeVar("_T")


def usdc(api: Api) -> str:
    return next(t.address for t in api.settings.chains[CHAIN].tokens if t.symbol == "USDC")


async def create(api: Api, key: str, **changes: Any) -> dict[str, Any]:
    body = {
        "amount": "10",
        "amountSymbol": "USDC",
        "tokenIn": usdc(api),
        "source_chain": CHAIN,
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": PAYEE,
        "refund_address": PAYEE,
        **changes,
    }
    status, record, _ = await api.call("POST", "/intents", key, body=body)
    assert status == 201, record
    return record


async def pay(api: Api, pool: Pool, record: dict[str, Any], amount: int) -> None:
    tx = "0x" + secrets.token_hex(32)
    token = usdc(api).lower()
    message = DepositMessage(
        id=deposit_id(CHAIN, tx, token, 0),
        chain=CHAIN,
        chain_id=84532,
        tx_hash=tx,
        log_index=0,
        transfer_index=0,
        block_number=1,
        block_hash="0x" + secrets.token_hex(32),
        block_time=int(datetime.now(UTC).timestamp()),
        token=token,
        from_address="0x" + "2" * 40,
        to_address=record["intent_address"].lower(),
        amount=amount,
    )
    async with pool.acquire() as conn:
        outcome = await apply_deposit(conn, api.settings, message, now=datetime.now(UTC))
    assert outcome is Outcome.CREDITED


async def expire_now(api: Api, pool: Pool, intent_id: int) -> None:
    row = await intent_store.get_by_id(pool, intent_id)  # type: ignore[arg-type]
    assert row is not None
    async with pool.acquire() as conn:
        later = row.expires_at + timedelta(seconds=1)
        assert await expire(conn, api.settings, intent_id, now=later) is Outcome.EXPIRED


async def until(check: Callable[[], Awaitable[_T | None]], seconds: float = 10.0) -> _T:
    """The first non-None answer of ``check``: the list shows an event once every
    transaction older than it has ended, and the database is shared with other tests."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        found = await check()
        if found is not None:
            return found
        assert asyncio.get_running_loop().time() < deadline, "not visible in time"
        await asyncio.sleep(0.05)


async def page(api: Api, key: str, path: str = "/events", **params: Any) -> dict[str, Any]:
    status, body, _ = await api.call("GET", path, key, params=params or None)
    assert status == 200, body
    EventPage.model_validate(body)
    return body


async def all_events(api: Api, key: str, **params: Any) -> list[dict[str, Any]]:
    """Every event the list shows, following cursors."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        extra = {"cursor": cursor} if cursor else {}
        body = await page(api, key, **params, **extra)
        found += body["data"]
        if not body["has_more"]:
            return found
        cursor = body["next_cursor"]


async def outbox(pool: Pool, intent_id: int) -> list[dict[str, Any]]:
    rows = await pool.fetch("SELECT payload FROM outbox WHERE key = $1 ORDER BY id", str(intent_id))
    return [orjson.loads(bytes(r["payload"])) for r in rows]


def assert_problem(status: int, data: Any, expected: int, code: str, field: str | None) -> None:
    assert (status, data.get("code"), data.get("field")) == (expected, code, field), data
    Problem.model_validate(data)


async def test_the_timeline_is_the_outbox_events_oldest_first(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    await pay(api, pool, record, 4_000_000)
    await pay(api, pool, record, DUE - 4_000_000)
    body = await page(api, key, f"/intents/{record['id']}/events")
    assert body["data"] == await outbox(pool, record["id"])  # the same envelopes
    assert [(e["type"], e["sequence"]) for e in body["data"]] == [
        ("intent_funded", 1),
        ("intent_funded", 2),
    ]
    first, second = (e["data"]["funding"] for e in body["data"])
    assert (first["status"], first["shortfall"]) == ("UNDERFUNDED", "6.115")
    assert (second["status"], second["shortfall"]) == ("EXACT", "0")
    assert {e["mode"] for e in body["data"]} == {"test"}
    assert body["has_more"] is False
    # one at a time, by cursor
    one = await page(api, key, f"/intents/{record['id']}/events", limit=1)
    assert [e["sequence"] for e in one["data"]] == [1] and one["has_more"] is True
    rest = await page(
        api, key, f"/intents/{record['id']}/events", limit=1, cursor=one["next_cursor"]
    )
    assert [e["sequence"] for e in rest["data"]] == [2] and rest["has_more"] is False


async def test_an_intent_expiring_with_nothing_received_ends_with_intent_expired(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    await expire_now(api, pool, record["id"])
    [ended] = (await page(api, key, f"/intents/{record['id']}/events"))["data"]
    assert (ended["type"], ended["sequence"]) == ("intent_expired", 1)
    assert ended["intent"]["intent_status"] == "EXPIRED"
    assert ended["data"] == {
        "funding": {
            "status": "NONE",
            "received": "0",
            "total": "10.115",
            "shortfall": "10.115",
            "excess": "0",
        }
    }
    assert is_terminal(ended["type"])
    listed = await until(
        lambda: _first(all_events(api, key, type="intent_expired", intent_id=record["id"]))
    )
    assert listed == ended


async def _first(found: Awaitable[list[dict[str, Any]]]) -> dict[str, Any] | None:
    events = await found
    return events[0] if events else None


async def test_filters_by_type_intent_and_time(api: Api, pool: Pool, make_key: MakeKey) -> None:
    key = await make_key("test")
    funded, expired = await create(api, key), await create(api, key)
    await pay(api, pool, funded, DUE)
    await expire_now(api, pool, expired["id"])

    async def both() -> list[dict[str, Any]] | None:
        found = await all_events(api, key)
        return found if len(found) == 2 else None

    newest_first = await until(both)
    assert [e["type"] for e in newest_first] == ["intent_expired", "intent_funded"]
    oldest_first = await all_events(api, key, order="asc")
    assert oldest_first == newest_first[::-1]
    for types in (["intent_funded", "intent_expired"], ["intent_funded,intent_expired"]):
        assert await all_events(api, key, type=types) == newest_first
    assert await all_events(api, key, type="intent_completed") == []
    assert await all_events(api, key, intent_id=funded["id"]) == newest_first[1:]
    created = datetime.fromisoformat(newest_first[0]["created_at"])
    stamp = created.isoformat().replace("+00:00", "Z")
    assert await all_events(api, key, created_after=stamp) == newest_first[:1]
    assert await all_events(api, key, created_before=stamp) == newest_first[1:]
    later = (created + timedelta(microseconds=1)).isoformat().replace("+00:00", "Z")
    assert await all_events(api, key, created_after=later) == []


async def test_bad_parameters_get_precise_problems(api: Api, make_key: MakeKey) -> None:
    key = await make_key("test")
    cases: list[tuple[str, dict[str, Any], int, str, str]] = [
        ("/events", {"type": "intent_paid"}, 422, "unknown_event_type", "type"),
        ("/events", {"type": "intent_funded,"}, 422, "unknown_event_type", "type"),
        ("/events", {"created_after": "yesterday"}, 400, "invalid_time", "created_after"),
        (
            "/events",
            {"created_before": "2026-11-23T10:00:00"},
            400,
            "invalid_time",
            "created_before",
        ),
        ("/events", {"cursor": "not a cursor"}, 400, "invalid_cursor", "cursor"),
        ("/events", {"cursor": "bm9wZQ"}, 400, "invalid_cursor", "cursor"),
        ("/events", {"cursor": encode_sequence_cursor(3)}, 400, "invalid_cursor", "cursor"),
        ("/events", {"limit": "101"}, 400, "validation_error", "limit"),
        ("/events", {"limit": "0"}, 400, "validation_error", "limit"),
        ("/events", {"order": "sideways"}, 400, "validation_error", "order"),
        ("/events", {"intent_id": "x"}, 400, "validation_error", "intent_id"),
        ("/events", [("order", "asc"), ("order", "desc")], 422, "repeated_parameter", "order"),
        ("/intents/1/events", {"cursor": "!"}, 400, "invalid_cursor", "cursor"),
    ]
    for path, params, status, code, field in cases:
        got, data, response = await api.call("GET", path, key, params=params)
        assert_problem(got, data, status, code, field)
        assert response.headers["Content-Type"] == "application/problem+json"
    # a list cursor is not a timeline cursor either
    cursor = encode_log_cursor(LogPosition(1, 1))
    status, data, _ = await api.call("GET", "/intents/1/events", key, params={"cursor": cursor})
    assert_problem(status, data, 400, "invalid_cursor", "cursor")


async def test_paging_is_stable_while_events_arrive(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    records = [await create(api, key) for _ in range(7)]
    for record in records:
        await expire_now(api, pool, record["id"])
    before = await until(lambda: _all_if(all_events(api, key), 7))
    # newest first, three at a time, while new events arrive at the head
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        extra = {"cursor": cursor} if cursor else {}
        body = await page(api, key, limit=3, **extra)
        seen += body["data"]
        await pay(api, pool, await create(api, key), 1_000_000)  # a newer event
        if not body["has_more"]:
            break
        cursor = body["next_cursor"]
    assert seen == before  # nothing repeated, nothing skipped
    # oldest first: the pages go on into the events that arrived meanwhile
    forward: list[dict[str, Any]] = []
    cursor = None
    arrived = 0
    while True:
        extra = {"cursor": cursor} if cursor else {}
        body = await page(api, key, order="asc", limit=4, **extra)
        forward += body["data"]
        if arrived < 3:
            await pay(api, pool, await create(api, key), 1_000_000)
            arrived += 1
        cursor = body["next_cursor"]
        if not body["has_more"]:
            if arrived >= 3 and len(forward) == 7 + 3 + 3:
                break
            await asyncio.sleep(0.05)  # what arrived last may not show yet
    ids = [e["id"] for e in forward]
    assert len(set(ids)) == len(ids) == 13
    assert forward[:7] == before[::-1]


async def _all_if(
    found: Awaitable[list[dict[str, Any]]], count: int
) -> list[dict[str, Any]] | None:
    events = await found
    return events if len(events) == count else None


async def test_an_event_committing_late_is_not_skipped(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    """Oldest-first paging never passes an event a still-open transaction will commit."""
    key = await make_key("test")
    slow, fast = await create(api, key), await create(api, key)
    start = await page(api, key, order="asc")
    cursor = start["next_cursor"]
    async with pool.acquire() as conn:
        open_tx = conn.transaction()
        await open_tx.start()
        try:
            # the slow transaction starts writing first, then the fast one commits
            await conn.execute("SELECT id FROM intents WHERE id = $1 FOR UPDATE", slow["id"])
            await pay(api, pool, fast, 1_000_000)
            await asyncio.sleep(0.3)
            params = {"order": "asc", **({"cursor": cursor} if cursor else {})}
            meanwhile = await page(api, key, **params)
            assert meanwhile["data"] == []  # the fast event waits for the older transaction
            await _pay_in(api, conn, slow, 2_000_000)
        finally:
            await open_tx.commit()
    params = {"order": "asc", **({"cursor": cursor} if cursor else {})}
    after = await until(lambda: _all_if(_data(page(api, key, **params)), 2))
    assert [e["intent"]["id"] for e in after] == [slow["id"], fast["id"]]


async def _data(body: Awaitable[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await body)["data"]
    return found


async def _pay_in(api: Api, conn: Any, record: dict[str, Any], amount: int) -> None:
    tx = "0x" + secrets.token_hex(32)
    token = usdc(api).lower()
    message = DepositMessage(
        id=deposit_id(CHAIN, tx, token, 0),
        chain=CHAIN,
        chain_id=84532,
        tx_hash=tx,
        log_index=0,
        transfer_index=0,
        block_number=1,
        block_hash="0x" + secrets.token_hex(32),
        block_time=int(datetime.now(UTC).timestamp()),
        token=token,
        from_address="0x" + "2" * 40,
        to_address=record["intent_address"].lower(),
        amount=amount,
    )
    assert await apply_deposit(conn, api.settings, message, now=datetime.now(UTC)) is (
        Outcome.CREDITED
    )


async def test_another_clients_events_are_never_visible(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    name = f"client-{uuid.uuid4().hex[:8]}"
    mine, theirs = await make_key("test", client=name), await make_key("test")
    live = await make_key("live", client=name)  # same client, main networks only
    record = await create(api, mine)
    await pay(api, pool, record, 1_000_000)
    await until(lambda: _all_if(all_events(api, mine), 1))
    assert await all_events(api, theirs) == []
    assert await all_events(api, theirs, intent_id=record["id"]) == []
    status, data, _ = await api.call("GET", f"/intents/{record['id']}/events", theirs)
    assert_problem(status, data, 404, "intent_not_found", None)
    assert await all_events(api, live) == []  # a test intent's events are not live
    status, data, _ = await api.call("GET", f"/intents/{record['id']}/events", live)
    assert status == 404
    status, data, _ = await api.call("GET", "/events", None)
    assert status == 401


async def test_the_expiry_loop_prunes_events_past_their_retention(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    old, older, new = await create(api, key), await create(api, key), await create(api, key)
    for record in (old, older, new):
        await expire_now(api, pool, record["id"])
    days = api.settings.intents.event_retention_days
    await pool.execute(
        "UPDATE intent_events SET created_at = now() - make_interval(days => $1, secs => 1)"
        " WHERE intent_id = ANY($2::bigint[])",
        days,
        [old["id"], older["id"]],
    )
    due = await pool.fetchval(
        "SELECT count(*) FROM intent_events WHERE created_at < now() - make_interval(days => $1)",
        days,
    )
    expiry = Expiry(api.settings, pool, prune_every=3600, prune_batch=1)
    deleted = [await expiry.prune_when_due() for _ in range(due + 1)]
    assert deleted == [1] * due + [0]  # one batch per round, until none is left
    for record in (old, older):
        assert (await page(api, key, f"/intents/{record['id']}/events"))["data"] == []
    assert len((await page(api, key, f"/intents/{new['id']}/events"))["data"]) == 1
    await pool.execute(
        "UPDATE intent_events SET created_at = created_at - interval '1000 days'"
        " WHERE intent_id = $1",
        new["id"],
    )
    assert await expiry.prune_when_due() == 0  # not due again within prune_every
