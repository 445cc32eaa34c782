"""The audit log in PostgreSQL (``audit_log``, migration 0019): append, page, export, prune.

:func:`record` writes on the caller's connection, inside the caller's transaction: the
record commits with the change it describes, or neither does. The table refuses
updates and deletes (a trigger), except the retention pruning of :func:`prune`, which
sets ``intentd.audit_prune`` for its own transaction only.

Pages (:func:`page`) are newest first in the order ``(tx_id, id)``: the writing
transaction's id (``audit_log.tx_id``, migration 0022), then the record's id. A page
shows only records of transactions older than every transaction still running
(``pg_snapshot_xmin`` of the statement's snapshot), so a record whose transaction
commits after a page was read always sorts before (newer than) that page: a cursor
already handed out never skips it (a reload shows it on top). Paging by id alone could
not promise that: an id is drawn at the insert, and a slow transaction commits its
record behind a cursor. The price, as for the event log and the intent list: a record
is listed once every transaction that began before its own has ended (normally
milliseconds). An export (:func:`stream`) reads one snapshot in batches, so its memory
stays bounded whatever the log's size.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson

from intentd.access.actors import Actor
from intentd.adapters.postgres import Connection

__all__ = [
    "AuditEntry",
    "AuditFilter",
    "AuditPosition",
    "AuditRow",
    "page",
    "prune",
    "record",
    "stream",
]

_COLUMNS = (
    "id, at, actor_kind, actor_id, actor_label, action, object_kind, object_id, mode,"
    " source, result, detail::text AS detail"
)
_VISIBLE = "tx_id < pg_snapshot_xmin(pg_current_snapshot())::text::bigint"


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """What happened: ``action`` (``intent.refund``, ``webhook.create`` ...) on an object."""

    action: str
    object_kind: str
    object_id: str
    result: str = "ok"
    """``ok``, ``pending`` (waits for approval), ``refused`` (the object's state did not
    allow it), ``denied`` (the actor may not), ``failed``."""
    mode: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    at: datetime
    actor_kind: str
    actor_id: str
    actor_label: str
    action: str
    object_kind: str
    object_id: str
    mode: str | None
    source: str | None
    result: str
    detail: dict[str, Any]


@dataclass(frozen=True, slots=True, order=True)
class AuditPosition:
    """Where a record is in the pages' order (what a cursor holds)."""

    tx_id: int
    id: int


@dataclass(frozen=True, slots=True)
class AuditFilter:
    client_id: UUID
    actor: str | None = None
    """An actor's id or label (an email, a key prefix), exactly."""
    action: str | None = None
    """An action, or its family (``intent`` matches ``intent.refund``)."""
    object_id: str | None = None
    result: str | None = None
    since: datetime | None = None
    """Inclusive."""
    until: datetime | None = None
    """Exclusive."""


async def record(conn: Connection, actor: Actor, entry: AuditEntry) -> int:
    """Append one record for ``actor`` (in the caller's transaction); its id."""
    found: int = await conn.fetchval(
        """
        INSERT INTO audit_log (client_id, actor_kind, actor_id, actor_label, action,
                               object_kind, object_id, mode, source, result, detail)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb)
        RETURNING id
        """,
        actor.client_id,
        actor.kind,
        actor.id,
        actor.label,
        entry.action,
        entry.object_kind,
        entry.object_id,
        entry.mode,
        actor.source,
        entry.result,
        orjson.dumps(dict(entry.detail), default=str).decode(),
    )
    return found


def _where(where: AuditFilter, args: list[Any]) -> list[str]:
    def arg(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    clauses = [f"client_id = {arg(where.client_id)}"]
    if where.actor is not None:
        value = arg(where.actor)
        clauses.append(f"(actor_id = {value} OR actor_label = {value})")
    if where.action is not None:
        value = arg(where.action)
        clauses.append(f"(action = {value} OR action LIKE {value} || '.%')")
    if where.object_id is not None:
        clauses.append(f"object_id = {arg(where.object_id)}")
    if where.result is not None:
        clauses.append(f"result = {arg(where.result)}")
    if where.since is not None:
        clauses.append(f"at >= {arg(where.since)}")
    if where.until is not None:
        clauses.append(f"at < {arg(where.until)}")
    return clauses


async def page(
    conn: Connection, where: AuditFilter, *, before: AuditPosition | None, limit: int
) -> list[tuple[AuditPosition, AuditRow]]:
    """Up to ``limit`` records matching ``where`` older than ``before``, newest first,
    each with its position; only records of transactions older than every one still
    running."""
    args: list[Any] = []
    clauses = [*_where(where, args), _VISIBLE]
    if before is not None:
        args += [before.tx_id, before.id]
        clauses.append(f"(tx_id, id) < (${len(args) - 1}, ${len(args)})")
    args.append(limit)
    rows = await conn.fetch(
        f"SELECT tx_id, {_COLUMNS} FROM audit_log WHERE {' AND '.join(clauses)}"
        f" ORDER BY tx_id DESC, id DESC LIMIT ${len(args)}",
        *args,
    )
    return [(AuditPosition(r["tx_id"], r["id"]), _row(r)) for r in rows]


async def stream(
    conn: Connection, where: AuditFilter, *, batch: int = 1_000
) -> AsyncIterator[AuditRow]:
    """Every record matching ``where``, oldest first, read from one snapshot in batches
    (a server-side cursor: memory stays bounded)."""
    args: list[Any] = []
    clauses = _where(where, args)
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        cursor = conn.cursor(
            f"SELECT {_COLUMNS} FROM audit_log WHERE {' AND '.join(clauses)} ORDER BY id",
            *args,
            prefetch=batch,
        )
        async for row in cursor:
            yield _row(row)


async def prune(conn: Connection, *, older_than_days: int, limit: int = 1_000) -> int:
    """Delete up to ``limit`` records older than ``older_than_days``, oldest first; how many
    (``limit``: call again). The only delete the table allows."""
    async with conn.transaction():
        await conn.execute("SET LOCAL intentd.audit_prune = 'on'")
        status: str = await conn.execute(
            "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log"
            " WHERE at < now() - make_interval(days => $1)"
            " ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED)",
            older_than_days,
            limit,
        )
    return int(status.rsplit(maxsplit=1)[-1])


def _row(row: Any) -> AuditRow:
    values = dict(row)
    values.pop("tx_id", None)
    values["detail"] = orjson.loads(values["detail"])
    return AuditRow(**values)
