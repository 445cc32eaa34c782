"""The intent list in PostgreSQL (``GET /api/v1/intents``): one client's intents, filtered,
a page at a time by cursor.

Every query names the client and the source chains its key may see. The list's order is
``(created_tx, id)``: the creating transaction's id (``intents.created_tx``, migration
0012), then the intent id. :func:`page` shows only intents of transactions older than
every transaction still running (``pg_snapshot_xmin`` of the statement's snapshot), so
an intent that commits after a page was read always sorts after (is newer than) that
page: paging newest first never skips it below a cursor already handed out, and paging
oldest first picks it up later. Ordering by ``created_at`` and id could not promise
that: an id and a time are drawn before the insert commits, so a slow transaction
commits a row behind a cursor. The price, as for the event log: an intent is listed
once every transaction that began before its own has ended (normally milliseconds).

Rows are found by index (migration 0012) and read as ``intent_store`` reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson

from intentd.adapters.postgres import Connection, intent_store
from intentd.contract.record import IntentRow

__all__ = ["IntentFilter", "ListPosition", "explain", "page"]

_VISIBLE = "created_tx < pg_snapshot_xmin(pg_current_snapshot())::text::bigint"


@dataclass(frozen=True, slots=True, order=True)
class ListPosition:
    """Where an intent is in the list (what a cursor holds)."""

    created_tx: int
    intent_id: int


@dataclass(frozen=True, slots=True)
class IntentFilter:
    """Which intents of one client a list shows; None (or empty) filters nothing."""

    client_id: UUID
    source_chains: Sequence[str]
    """The source chains the caller may see (its key's network classes)."""
    status: str | None = None
    funding_status: str | None = None
    destination_chain: str | None = None
    sender: str | None = None
    """Lowercase."""
    recipient: str | None = None
    """Lowercase."""
    session_id: str | None = None
    metadata: tuple[str, str] | None = None
    """A key and the string value it must have."""
    created_after: datetime | None = None
    """Inclusive."""
    created_before: datetime | None = None
    """Exclusive."""


async def page(
    conn: Connection,
    where: IntentFilter,
    *,
    after: ListPosition | None,
    descending: bool,
    limit: int,
) -> list[tuple[ListPosition, IntentRow]]:
    """Up to ``limit`` intents matching ``where`` past ``after`` in the chosen order
    (newest first when ``descending``), each with its position."""
    if not where.source_chains:
        return []
    sql, args = _query(where, after, descending, limit, intent_store.COLUMNS)
    async with conn.transaction():
        # Planned for these values every time: a cached generic plan cannot tell a
        # selective filter from one that matches most of the client's intents.
        await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        found = await conn.fetch(sql, *args)
    return [(ListPosition(r["created_tx"], r["id"]), intent_store.row_of(r)) for r in found]


async def explain(
    conn: Connection,
    where: IntentFilter,
    *,
    after: ListPosition | None = None,
    descending: bool = True,
    limit: int = 101,
) -> str:
    """The plan :func:`page` runs for these arguments, as executed (``EXPLAIN ANALYZE``)."""
    sql, args = _query(where, after, descending, limit, "id")
    async with conn.transaction():
        await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        lines = await conn.fetch(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {sql}", *args)
    return "\n".join(line[0] for line in lines)


def _query(
    where: IntentFilter, after: ListPosition | None, descending: bool, limit: int, columns: str
) -> tuple[str, list[Any]]:
    """The statement and its arguments. A window of ``created_at`` bounded on both
    sides is read first through ``(client_id, created_at)`` and then ordered: walking
    the list order to an old window would pass every newer intent (the planner cannot
    know that ``created_tx`` follows ``created_at``)."""
    args: list[Any] = [where.client_id]
    clauses = ["client_id = $1", _VISIBLE]

    def arg(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    if len(where.source_chains) == 1:
        clauses.append(f"source_chain = {arg(where.source_chains[0])}")
    else:
        clauses.append(f"source_chain = ANY({arg(list(where.source_chains))}::text[])")
    for column in ("status", "funding_status", "destination_chain", "sender", "recipient"):
        value = getattr(where, column)
        if value is not None:
            clauses.append(f"{column} = {arg(value)}")
    if where.session_id is not None:
        clauses.append(f"session_id = {arg(where.session_id)}")
    if where.metadata is not None:
        key, value = where.metadata
        clauses.append(f"metadata @> {arg(orjson.dumps({key: value}).decode())}::jsonb")
    if where.created_after is not None:
        clauses.append(f"created_at >= {arg(where.created_after)}")
    if where.created_before is not None:
        clauses.append(f"created_at < {arg(where.created_before)}")
    direction, beyond = ("DESC", "<") if descending else ("ASC", ">")
    if after is not None:
        position = f"({arg(after.created_tx)}, {arg(after.intent_id)})"
        clauses.append(f"(created_tx, id) {beyond} {position}")
    order = f"created_tx {direction}, id {direction}"
    if where.created_after is None or where.created_before is None:
        sql = (
            f"SELECT created_tx, {columns} FROM intents WHERE {' AND '.join(clauses)}"
            f" ORDER BY {order} LIMIT {arg(limit)}"
        )
        return sql, args
    sql = (
        "WITH in_window AS MATERIALIZED (SELECT created_tx, id FROM intents"
        f" WHERE {' AND '.join(clauses)}),"
        " listed AS MATERIALIZED (SELECT created_tx, id FROM in_window"
        f" ORDER BY {order} LIMIT {arg(limit)})"
        f" SELECT listed.created_tx, {_qualified(columns)} FROM listed"
        " JOIN intents ON intents.id = listed.id"
        f" ORDER BY listed.created_tx {direction}, listed.id {direction}"
    )
    return sql, args


def _qualified(columns: str) -> str:
    return ", ".join(f"intents.{name.strip()}" for name in columns.split(","))
