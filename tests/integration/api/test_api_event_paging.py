"""The event log's cursors while events arrive: no event repeated or skipped, newest
first or oldest first, even when a transaction commits its event late."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.integration.api.conftest import Api, MakeKey
from tests.integration.api.events_support import (
    all_events,
    all_if,
    create,
    data_of,
    deposit,
    expire_now,
    page,
    pay,
    until,
)
from tests.lifecycle_calls import Outcome, apply_deposit

from intentd.adapters.postgres import Pool

pytestmark = pytest.mark.integration


async def test_paging_is_stable_while_events_arrive(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    records = [await create(api, key) for _ in range(7)]
    for record in records:
        await expire_now(api, pool, record["id"])
    before = await until(lambda: all_if(all_events(api, key), 7))
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
            message = deposit(api, slow, 2_000_000)
            now = datetime.now(UTC)
            assert await apply_deposit(conn, api.settings, message, now=now) is Outcome.CREDITED
        finally:
            await open_tx.commit()
    params = {"order": "asc", **({"cursor": cursor} if cursor else {})}
    after = await until(lambda: all_if(data_of(page(api, key, **params)), 2))
    assert [e["intent"]["id"] for e in after] == [slow["id"], fast["id"]]
