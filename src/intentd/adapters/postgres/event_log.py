"""The event log in PostgreSQL (``intent_events``, migration 0011): written, read, pruned.

:func:`record` runs on the caller's connection, inside the lifecycle's transaction,
next to the event's outbox row: the log holds exactly the events relayed to Kafka,
committed with the intent change that caused them.

Reads are client-scoped (every query names the client and the modes its key sees).
The log's order is ``(tx_id, position)``: the writing transaction's id, then the
insert order. :func:`page` shows only rows of transactions older than every
transaction still running (``pg_snapshot_xmin`` of the statement's snapshot), so an
event that commits after a page was read always sorts after that page: paging by
cursor, oldest first, never skips an event, however transactions interleave. The
price: an event shows up once every transaction that began before it has ended
(normally milliseconds; a write transaction held open elsewhere delays it).

An intent's timeline (:func:`timeline`) is ordered by ``sequence``, which the
lifecycle assigns under the intent's row lock, so it needs no such horizon.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson

from intentd.adapters.postgres import Connection

__all__ = ["EventFilter", "LogPosition", "StoredEvent", "page", "prune", "record", "timeline"]

_VISIBLE = "tx_id < pg_snapshot_xmin(pg_current_snapshot())::text::bigint"


@dataclass(frozen=True, slots=True, order=True)
class LogPosition:
    """Where an event is in the log (what a list cursor holds)."""

    tx_id: int
    position: int


@dataclass(frozen=True, slots=True)
class StoredEvent:
    at: LogPosition
    sequence: int
    body: dict[str, Any]
    """The envelope, as written to the outbox."""


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Which events of one client a list shows."""

    client_id: UUID
    modes: Sequence[str]
    """The modes the caller's key sees (``test``, ``live``)."""
    types: Sequence[str] = ()
    """Event types; empty for all."""
    intent_id: int | None = None
    created_after: datetime | None = None
    """Inclusive."""
    created_before: datetime | None = None
    """Exclusive."""


async def record(
    conn: Connection,
    *,
    intent_id: int,
    client_id: UUID,
    envelope: Mapping[str, Any],
    payload: bytes,
    created_at: datetime,
) -> None:
    """Add one event (``envelope``, serialized as ``payload``) to the log."""
    await conn.execute(
        "INSERT INTO intent_events (id, intent_id, client_id, mode, type, sequence,"
        " created_at, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)",
        UUID(envelope["id"]),
        intent_id,
        client_id,
        envelope["mode"],
        envelope["type"],
        envelope["sequence"],
        created_at,
        payload.decode(),
    )


async def page(
    conn: Connection,
    where: EventFilter,
    *,
    after: LogPosition | None,
    descending: bool,
    limit: int,
) -> list[StoredEvent]:
    """Up to ``limit`` events matching ``where`` past ``after`` in the chosen order
    (newest first when ``descending``)."""
    args: list[Any] = [where.client_id, list(where.modes)]
    clauses = ["client_id = $1", "mode = ANY($2::text[])", _VISIBLE]

    def arg(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    if len(where.types) == 1:  # equality: the type index then yields the order itself
        clauses.append(f"type = {arg(where.types[0])}")
    elif where.types:
        clauses.append(f"type = ANY({arg(list(where.types))}::text[])")
    if where.intent_id is not None:
        clauses.append(f"intent_id = {arg(where.intent_id)}")
    if where.created_after is not None:
        clauses.append(f"created_at >= {arg(where.created_after)}")
    if where.created_before is not None:
        clauses.append(f"created_at < {arg(where.created_before)}")
    direction, beyond = ("DESC", "<") if descending else ("ASC", ">")
    if after is not None:
        clauses.append(f"(tx_id, position) {beyond} ({arg(after.tx_id)}, {arg(after.position)})")
    async with conn.transaction():
        # Planned for these values every time: a cached generic plan walks the client's
        # whole log for a rare type or a narrow time range (bench/event_log.py).
        await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        rows = await conn.fetch(
            "SELECT tx_id, position, sequence, body::text AS body FROM intent_events"
            f" WHERE {' AND '.join(clauses)}"
            f" ORDER BY tx_id {direction}, position {direction} LIMIT {arg(limit)}",
            *args,
        )
    return [_stored(row) for row in rows]


async def timeline(
    conn: Connection, client_id: UUID, intent_id: int, *, after_sequence: int, limit: int
) -> list[StoredEvent]:
    """Up to ``limit`` events of one intent after ``after_sequence``, oldest first."""
    rows = await conn.fetch(
        "SELECT tx_id, position, sequence, body::text AS body FROM intent_events"
        " WHERE intent_id = $1 AND client_id = $2 AND sequence > $3"
        " ORDER BY sequence LIMIT $4",
        intent_id,
        client_id,
        after_sequence,
        limit,
    )
    return [_stored(row) for row in rows]


async def prune(conn: Connection, *, older_than_days: int, limit: int = 1_000) -> int:
    """Delete up to ``limit`` events created more than ``older_than_days`` ago, oldest
    first, skipping rows another pruner holds; return how many (``limit``: call again)."""
    status: str = await conn.execute(
        "DELETE FROM intent_events WHERE id IN (SELECT id FROM intent_events"
        " WHERE created_at < now() - make_interval(days => $1)"
        " ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
        older_than_days,
        limit,
    )
    return int(status.rsplit(maxsplit=1)[-1])


def _stored(row: Any) -> StoredEvent:
    return StoredEvent(
        at=LogPosition(row["tx_id"], row["position"]),
        sequence=row["sequence"],
        body=orjson.loads(row["body"]),
    )
