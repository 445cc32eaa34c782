"""The event log over HTTP: ``GET /events`` and ``GET /intents/{id}/events`` against
real PostgreSQL, fed by the lifecycle's own handlers (deposits, expiry). Paging while
events arrive: test_api_event_paging.py."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from tests.integration.api.conftest import Api, MakeKey
from tests.integration.api.events_support import (
    DUE,
    all_events,
    all_if,
    assert_problem,
    create,
    expire_now,
    first,
    outbox,
    page,
    pay,
    until,
)

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.event_log import LogPosition
from intentd.adapters.postgres.lifecycle_uow import PostgresStore
from intentd.api.events.params import encode_log_cursor, encode_sequence_cursor
from intentd.domain.events import is_terminal
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.expiry import Expiry

pytestmark = pytest.mark.integration


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
    part, whole = (e["data"]["funding"] for e in body["data"])
    assert (part["status"], part["shortfall"]) == ("UNDERFUNDED", "6.115")
    assert (whole["status"], whole["shortfall"]) == ("EXACT", "0")
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
        lambda: first(all_events(api, key, type="intent_expired", intent_id=record["id"]))
    )
    assert listed == ended


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


async def test_another_clients_events_are_never_visible(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    name = f"client-{uuid.uuid4().hex[:8]}"
    mine, theirs = await make_key("test", client=name), await make_key("test")
    live = await make_key("live", client=name)  # same client, main networks only
    record = await create(api, mine)
    await pay(api, pool, record, 1_000_000)
    await until(lambda: all_if(all_events(api, mine), 1))
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
    expiry = Expiry(
        api.settings,
        PostgresStore(pool),
        book=ChainBook.of_settings(api.settings),
        prune_every=3600,
        prune_batch=1,
    )
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
