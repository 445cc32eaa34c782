"""Refund approvals and the client policy that asks for them, in PostgreSQL (migration 0019).

At most one approval per intent is pending (a unique partial index): two requests
racing for the same intent make one approval, the other finds it. An approval is
decided under its row lock (:func:`lock`), in the transaction that runs the command
it approves (``merchant.approval_decisions``), so it is executed once or not at all. A pending
approval past its end is marked expired when next read for its intent or its client
(:func:`expire_stale`), and is never executed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID, uuid4

from intentd.access.approvals import ApprovalStatus
from intentd.adapters.postgres import Connection

__all__ = [
    "Approval",
    "create",
    "decide",
    "expire_stale",
    "get",
    "list_approvals",
    "lock",
    "pending_count",
    "pending_for_intent",
    "pending_for_intents",
    "set_threshold",
    "threshold",
]

_COLUMNS = (
    "a.id, a.client_id, a.intent_id, i.intent_address, a.command, a.mode, a.amount,"
    " a.amount_usd, i.asset_token_symbol, i.asset_token_decimals, i.source_chain, a.status,"
    " a.requested_by_kind, a.requested_by_id, a.requested_by_label, a.requested_at,"
    " a.expires_at, a.decided_by_id, a.decided_by_label, a.decided_at, a.outcome"
)
_FROM = "refund_approvals a JOIN intents i ON i.id = a.intent_id"


@dataclass(frozen=True, slots=True)
class Approval:
    id: UUID
    client_id: UUID
    intent_id: int
    intent_address: str
    command: str
    mode: str
    amount: int
    amount_usd: Decimal | None
    asset_token_symbol: str
    asset_token_decimals: int
    source_chain: str
    status: ApprovalStatus
    requested_by_kind: str
    requested_by_id: str
    requested_by_label: str
    requested_at: datetime
    expires_at: datetime
    decided_by_id: str | None
    decided_by_label: str | None
    decided_at: datetime | None
    outcome: str


def _approval(record: Any) -> Approval:
    values = dict(record)
    values["amount"] = int(values["amount"])
    values["status"] = ApprovalStatus(values["status"])
    return Approval(**values)


async def threshold(conn: Connection, client_id: UUID) -> tuple[bool, Decimal | None]:
    """(whether the client has its own policy, its threshold in USD: None for none)."""
    record = await conn.fetchrow(
        "SELECT refund_approval_above_usd FROM client_policies WHERE client_id = $1", client_id
    )
    if record is None:
        return False, None
    value: Decimal | None = record["refund_approval_above_usd"]
    return True, value


async def set_threshold(conn: Connection, client_id: UUID, value: Decimal | None) -> None:
    await conn.execute(
        """
        INSERT INTO client_policies (client_id, refund_approval_above_usd) VALUES ($1, $2)
        ON CONFLICT (client_id) DO UPDATE SET refund_approval_above_usd = excluded.
               refund_approval_above_usd, updated_at = now()
        """,
        client_id,
        value,
    )


async def expire_stale(
    conn: Connection, now: datetime, *, intent_id: int | None = None, client_id: UUID | None = None
) -> int:
    """Mark pending approvals past their end expired (of one intent or client)."""
    status: str = await conn.execute(
        "UPDATE refund_approvals SET status = 'expired', decided_at = expires_at"
        " WHERE status = 'pending' AND expires_at <= $1"
        " AND ($2::bigint IS NULL OR intent_id = $2) AND ($3::uuid IS NULL OR client_id = $3)",
        now,
        intent_id,
        client_id,
    )
    return int(status.rsplit(maxsplit=1)[-1])


async def pending_for_intents(conn: Connection, intent_ids: list[int]) -> dict[int, Approval]:
    """The pending approval of each of these intents that has one."""
    records = await conn.fetch(
        f"SELECT {_COLUMNS} FROM {_FROM} WHERE a.intent_id = ANY($1::bigint[])"
        " AND a.status = 'pending'",
        intent_ids,
    )
    return {r["intent_id"]: _approval(r) for r in records}


async def pending_count(conn: Connection, client_id: UUID, mode: str, now: datetime) -> int:
    """The client's pending approvals in ``mode`` not yet past their end."""
    found: int = await conn.fetchval(
        "SELECT count(*) FROM refund_approvals WHERE client_id = $1 AND mode = $2"
        " AND status = 'pending' AND expires_at > $3",
        client_id,
        mode,
        now,
    )
    return found


async def pending_for_intent(conn: Connection, intent_id: int) -> Approval | None:
    record = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM {_FROM} WHERE a.intent_id = $1 AND a.status = 'pending'",
        intent_id,
    )
    return _approval(record) if record is not None else None


async def create(
    conn: Connection,
    *,
    client_id: UUID,
    intent_id: int,
    command: str,
    mode: str,
    amount: int,
    amount_usd: Decimal | None,
    requested_by: tuple[str, str, str],
    expires_at: datetime,
) -> Approval:
    """A pending approval; the intent's pending one instead if it has one already."""
    kind, by_id, label = requested_by
    approval_id = await conn.fetchval(
        """
        INSERT INTO refund_approvals (id, client_id, intent_id, command, mode, amount,
               amount_usd, status, requested_by_kind, requested_by_id, requested_by_label,
               expires_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $11)
        ON CONFLICT (intent_id) WHERE status = 'pending' DO NOTHING
        RETURNING id
        """,
        uuid4(),
        client_id,
        intent_id,
        command,
        mode,
        amount,
        amount_usd,
        kind,
        by_id,
        label,
        expires_at,
    )
    found = (
        await get(conn, approval_id)
        if approval_id is not None
        else await pending_for_intent(conn, intent_id)
    )
    assert found is not None
    return found


async def get(
    conn: Connection, approval_id: UUID, client_id: UUID | None = None
) -> Approval | None:
    record = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM {_FROM}"
        " WHERE a.id = $1 AND ($2::uuid IS NULL OR a.client_id = $2)",
        approval_id,
        client_id,
    )
    return _approval(record) if record is not None else None


async def lock(conn: Connection, approval_id: UUID, client_id: UUID) -> Approval | None:
    """The approval, its row locked until the caller's transaction ends."""
    record = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM {_FROM} WHERE a.id = $1 AND a.client_id = $2 FOR UPDATE OF a",
        approval_id,
        client_id,
    )
    return _approval(record) if record is not None else None


async def decide(
    conn: Connection,
    approval_id: UUID,
    status: ApprovalStatus,
    *,
    by: tuple[str, str] | None,
    outcome: str,
) -> None:
    """Record the decision on a pending approval (the caller holds its row lock)."""
    by_id, label = by if by is not None else (None, None)
    await conn.execute(
        "UPDATE refund_approvals SET status = $2, decided_by_id = $3, decided_by_label = $4,"
        " decided_at = now(), outcome = $5 WHERE id = $1 AND status = 'pending'",
        approval_id,
        status.value,
        by_id,
        label,
        outcome,
    )


async def list_approvals(
    conn: Connection,
    client_id: UUID,
    modes: list[str],
    *,
    status: ApprovalStatus | None,
    limit: int,
) -> list[Approval]:
    """The client's approvals in ``modes`` (of ``status``), newest first."""
    records = await conn.fetch(
        f"SELECT {_COLUMNS} FROM {_FROM} WHERE a.client_id = $1 AND a.mode = ANY($2::text[])"
        " AND ($3::text IS NULL OR a.status = $3) ORDER BY a.requested_at DESC LIMIT $4",
        client_id,
        modes,
        status.value if status is not None else None,
        limit,
    )
    return [_approval(r) for r in records]
