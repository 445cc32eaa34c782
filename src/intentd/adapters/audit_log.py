"""The audit log in PostgreSQL (``audit_log``, migration 0019): append, page, export, prune.

:func:`record` writes on the caller's connection, inside the caller's transaction: the
record commits with the change it describes, or neither does. The table refuses
updates and deletes (a trigger), except the retention pruning of :func:`prune`, which
sets ``intentd.audit_prune`` for its own transaction only. Pages are newest first by
id; an export (:func:`stream`) reads one snapshot in batches, so its memory stays
bounded whatever the log's size.
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

__all__ = ["AuditEntry", "AuditFilter", "AuditRow", "page", "prune", "record", "stream"]

_COLUMNS = (
    "id, at, actor_kind, actor_id, actor_label, action, object_kind, object_id, mode,"
    " source, result, detail::text AS detail"
)


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
    conn: Connection, where: AuditFilter, *, before: int | None, limit: int
) -> list[AuditRow]:
    """Up to ``limit`` records matching ``where`` with ids below ``before``, newest first."""
    args: list[Any] = []
    clauses = _where(where, args)
    if before is not None:
        args.append(before)
        clauses.append(f"id < ${len(args)}")
    args.append(limit)
    rows = await conn.fetch(
        f"SELECT {_COLUMNS} FROM audit_log WHERE {' AND '.join(clauses)}"
        f" ORDER BY id DESC LIMIT ${len(args)}",
        *args,
    )
    return [_row(r) for r in rows]


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
    values["detail"] = orjson.loads(values["detail"])
    return AuditRow(**values)
