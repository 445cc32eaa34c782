"""Intents in PostgreSQL: load, lock, save, and the lifecycle's scans (asyncpg).

Functions take a connection so the caller decides the transaction. Saving is a
compare-and-set on the row version: a save whose intent changed underneath it fails
with :class:`ConcurrentUpdate` instead of overwriting. An intent is read as an
:class:`~intentd.contract.record.IntentRow` of :data:`COLUMNS` (:func:`row_of`).
Creating intents is ``adapters.postgres.intent_inserts``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime

import asyncpg

from intentd.adapters.postgres import Connection
from intentd.contract.record import IntentRow
from intentd.domain.intent import Intent
from intentd.domain.status import FundingStatus, IntentStatus


class ConcurrentUpdate(Exception):
    """The intent changed between load and save."""


_COLUMNS = ", ".join(field.name for field in fields(IntentRow))
"""The columns of ``intents`` that are read: the fields of :class:`IntentRow`, in order."""


def _row(record: asyncpg.Record) -> IntentRow:
    data = dict(record)
    for key in (
        "total_due",
        "fees_in_asset",
        "app_fee_in_asset",
        "amount_out",
        "received",
        "refunded",
    ):
        data[key] = int(data[key])
    data["status"] = IntentStatus(data["status"])
    data["funding_status"] = FundingStatus(data["funding_status"])
    data["metadata"] = json.loads(data["metadata"])
    for key in ("prices", "valuation"):
        if data[key] is not None:
            data[key] = json.loads(data[key])
    return IntentRow(**data)


async def get_by_id(conn: Connection, intent_id: int) -> IntentRow | None:
    record = await conn.fetchrow(f"SELECT {_COLUMNS} FROM intents WHERE id = $1", intent_id)
    return _row(record) if record is not None else None


async def get_many_by_id(conn: Connection, ids: list[int]) -> dict[int, IntentRow]:
    """The intents of ``ids`` that exist, by id (one statement)."""
    records = await conn.fetch(f"SELECT {_COLUMNS} FROM intents WHERE id = ANY($1::bigint[])", ids)
    return {r["id"]: _row(r) for r in records}


async def get_many_by_address(conn: Connection, addresses: list[str]) -> dict[str, IntentRow]:
    """The intents at ``addresses`` (lower case) that exist, by address (one statement)."""
    records = await conn.fetch(
        f"SELECT {_COLUMNS} FROM intents WHERE intent_address = ANY($1::text[])", addresses
    )
    return {r["intent_address"]: _row(r) for r in records}


async def get_by_address(conn: Connection, address: str, *, lock: bool = False) -> IntentRow | None:
    """The intent at ``address`` (any case); ``lock`` takes its row lock (FOR UPDATE)."""
    suffix = " FOR UPDATE" if lock else ""
    record = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM intents WHERE intent_address = $1{suffix}", address.lower()
    )
    return _row(record) if record is not None else None


async def save_intent(conn: Connection, intent: Intent, *, expected_version: int) -> None:
    """Store what changed; compare-and-set on the row version. The total due and the
    amount out change only when a revaluation changed them; its figures replace the
    last valuation."""
    terms = intent.terms
    valuation = None if intent.valuation is None else json.dumps(intent.valuation)
    status = await conn.execute(
        """
        UPDATE intents
           SET received = $2, funding_status = $3, status = $4, event_sequence = $5,
               tx_hash = $6, relayer = $7, needs_relay = $8, refunded = $10,
               total_due = $11, amount_out = $12, awaiting_price = $13,
               valuation = COALESCE($14::jsonb, valuation),
               version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $9
        """,
        intent.id,
        intent.received,
        intent.funding.value,
        intent.status.value,
        intent.event_sequence,
        intent.tx_hash,
        intent.relayer,
        bool(intent.relayer),
        expected_version,
        intent.refunded,
        terms.total_due,
        terms.amount_out,
        intent.awaiting_price,
        valuation,
    )
    if status != "UPDATE 1":
        raise ConcurrentUpdate(f"intent {intent.id} changed while it was being updated")


async def due_for_expiry(
    conn: Connection, now: datetime, *, limit: int, skip: Sequence[int] = ()
) -> list[int]:
    """Ids of PENDING intents past ``expires_at`` (partial index; no table scan), but
    those in ``skip``."""
    rows = await conn.fetch(
        "SELECT id FROM intents WHERE status = 'PENDING' AND expires_at <= $1"
        " AND NOT (id = ANY($3::bigint[])) ORDER BY expires_at LIMIT $2",
        now,
        limit,
        list(skip),
    )
    return [r["id"] for r in rows]


async def awaiting_price(conn: Connection, *, limit: int) -> list[int]:
    """Ids of PENDING intents awaiting a price (partial index ``intents_awaiting_price``)."""
    rows = await conn.fetch(
        "SELECT id FROM intents WHERE awaiting_price AND status = 'PENDING' ORDER BY id LIMIT $1",
        limit,
    )
    return [r["id"] for r in rows]


async def next_expiry(conn: Connection) -> datetime | None:
    """The earliest ``expires_at`` among PENDING intents (partial index)."""
    value: datetime | None = await conn.fetchval(
        "SELECT min(expires_at) FROM intents WHERE status = 'PENDING'"
    )
    return value


async def lock_by_id(conn: Connection, intent_id: int) -> IntentRow | None:
    record = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM intents WHERE id = $1 FOR UPDATE", intent_id
    )
    return _row(record) if record is not None else None


async def count_for_session(conn: Connection, session_id: str) -> int:
    """How many intents the session ``session_id`` created (index ``intents_by_session``)."""
    count: int = await conn.fetchval(
        "SELECT count(*) FROM intents WHERE session_id = $1", session_id
    )
    return count


COLUMNS = _COLUMNS
"""The columns an :class:`IntentRow` is read from (for queries of other adapters)."""


def row_of(record: asyncpg.Record) -> IntentRow:
    """The :class:`IntentRow` of a record holding :data:`COLUMNS` (and maybe others,
    which are left out)."""
    return _row({name: record[name] for name in _FIELDS})  # type: ignore[arg-type]


_FIELDS = tuple(field.name for field in fields(IntentRow))
