"""The audit log's pages under concurrent commits, on real PostgreSQL: a record whose
transaction commits after a page was read is never skipped by the cursor that page
handed out; it sorts above the page (a reload shows it on top)."""

from __future__ import annotations

import asyncio
import secrets
import time

import pytest
from tests.integration.api.conftest import named_client

from intentd.access.actors import Actor
from intentd.adapters.postgres import Pool, audit_log
from intentd.adapters.postgres.audit_log import AuditEntry, AuditFilter, AuditPosition

pytestmark = pytest.mark.integration


async def walk(
    pool: Pool, where: AuditFilter, *, start: AuditPosition | None = None
) -> tuple[list[str], AuditPosition | None]:
    """Pages of one record from ``start`` to the end: the actions seen, and the cursor."""
    seen: list[str] = []
    cursor = start
    while True:
        async with pool.acquire() as conn:
            found = await audit_log.page(conn, where, before=cursor, limit=1)
        if not found:
            return seen, cursor
        cursor, row = found[0]
        seen.append(row.action)


async def everything(pool: Pool, where: AuditFilter, count: int) -> list[str]:
    """A fresh walk from the top, once ``count`` records are listed (each is listed once
    every transaction older than its own has ended: other tests share the server)."""
    deadline = time.monotonic() + 30
    while True:
        seen, _ = await walk(pool, where)
        if len(seen) >= count:
            return seen
        assert time.monotonic() < deadline, f"only {seen} listed"
        await asyncio.sleep(0.05)


async def test_a_record_that_commits_late_is_never_skipped_by_an_open_cursor(pool: Pool) -> None:
    async with pool.acquire() as conn:
        client = await named_client(conn, f"audit-{secrets.token_hex(4)}")
    actor = Actor.cli(client.id)
    where = AuditFilter(client_id=client.id)
    async with pool.acquire() as conn:
        await audit_log.record(conn, actor, AuditEntry("test.first", "thing", "1"))
    await everything(pool, where, 1)

    async with pool.acquire() as slow, pool.acquire() as fast:
        change = slow.transaction()
        await change.start()
        # the slow change draws its record's id first, and commits last
        await audit_log.record(slow, actor, AuditEntry("test.slow", "thing", "2"))
        await audit_log.record(fast, actor, AuditEntry("test.fast", "thing", "3"))
        # a reader pages through, a record a page, while the slow change is still open
        first_walk, cursor = await walk(pool, where)
        await change.commit()
    rest, _ = await walk(pool, where, start=cursor)
    assert rest == []  # the cursor is past everything it showed
    listed = await everything(pool, where, 3)
    assert sorted(listed) == ["test.fast", "test.first", "test.slow"]
    # nothing the reader missed lies below what it saw: a reload shows it all on top
    missed = [action for action in listed if action not in first_walk]
    assert listed[: len(missed)] == missed, (first_walk, listed)
    assert listed[len(missed) :] == first_walk
