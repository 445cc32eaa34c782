"""Recording webhook attempts in PostgreSQL, and what they do to deliveries and endpoints.

Guarantees of :func:`record_attempts` (in the caller's transaction): each attempt is
stored (the answer's head cut to :data:`RESPONSE_HEAD_BYTES`) and the schedule's
decision applied to its delivery (delivered, retried at its time, failed) and released
from its lease; each endpoint's ``failing_since`` follows its latest attempt of the
batch; a decision to disable an endpoint disables it and makes its pending deliveries
``failed`` (to be recovered). An attempt of a delivery deleted meanwhile (its endpoint
was deleted) is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from intentd.adapters.postgres import Connection
from intentd.webhooks.ports import RecordedAttempt
from intentd.webhooks.schedule import Decision

__all__ = ["RESPONSE_HEAD_BYTES", "outcome_of", "record_attempts"]

RESPONSE_HEAD_BYTES = 4096


def outcome_of(decision: Decision) -> str:
    if decision.delivered:
        return "delivered"
    if decision.disable is not None:
        return "disabled"
    return "failed" if decision.next_attempt_at is None else "retry"


def _status(decision: Decision) -> str:
    if decision.delivered:
        return "delivered"
    return "pending" if decision.next_attempt_at is not None else "failed"


def _head(text: str) -> str:
    return text.encode()[:RESPONSE_HEAD_BYTES].decode("utf-8", "ignore").replace("\x00", "")


@dataclass(frozen=True, slots=True)
class _EndpointChange:
    endpoint_id: UUID
    succeeded: bool
    """The endpoint's latest attempt of the batch succeeded."""
    failed_at: datetime | None
    """Its first failure of the batch (after its latest success, if any)."""
    disable: str | None
    at: datetime


def _endpoint_changes(attempts: Sequence[RecordedAttempt]) -> list[_EndpointChange]:
    """Per endpoint, what a batch of attempts changes (in the order they were made)."""
    changes: dict[UUID, _EndpointChange] = {}
    for r in sorted(attempts, key=lambda r: r.at):
        before = changes.get(r.delivery.endpoint_id)
        if r.decision.delivered:
            change = _EndpointChange(r.delivery.endpoint_id, True, None, None, r.at)
        else:
            first = before.failed_at if before is not None and before.failed_at else r.at
            change = _EndpointChange(r.delivery.endpoint_id, False, first, None, r.at)
        disable = r.decision.disable.value if r.decision.disable is not None else None
        if disable is None and before is not None:
            disable = before.disable
        changes[r.delivery.endpoint_id] = _EndpointChange(
            change.endpoint_id, change.succeeded, change.failed_at, disable, change.at
        )
    return list(changes.values())


async def record_attempts(conn: Connection, attempts: Sequence[RecordedAttempt]) -> None:
    """Store ``attempts`` and apply their decisions; the caller holds a transaction."""
    endpoints = _endpoint_changes(attempts)
    kept = await conn.fetch(
        """
        UPDATE webhook_deliveries d
           SET attempts = d.attempts + 1, round_attempts = d.round_attempts + 1,
               status = u.status, next_attempt_at = coalesce(u.next_at, d.next_attempt_at),
               lease_until = NULL, updated_at = u.at
          FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[])
               AS u (id, status, next_at, at)
         WHERE d.id = u.id
        RETURNING d.id
        """,
        [r.delivery.id for r in attempts],
        [_status(r.decision) for r in attempts],
        [r.decision.next_attempt_at for r in attempts],
        [r.at for r in attempts],
    )
    present = {row["id"] for row in kept}  # an endpoint deleted meanwhile: none
    rows = [r for r in attempts if r.delivery.id in present]
    await conn.execute(
        """
        INSERT INTO webhook_attempts (delivery_id, endpoint_id, attempted_at,
               status_code, latency_ms, error, response_head, outcome, next_attempt_at)
        SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::timestamptz[], $4::int[],
                             $5::int[], $6::text[], $7::text[], $8::text[],
                             $9::timestamptz[])
        """,
        [r.delivery.id for r in rows],
        [r.delivery.endpoint_id for r in rows],
        [r.at for r in rows],
        [r.attempt.status for r in rows],
        [max(int(r.attempt.latency * 1000), 0) for r in rows],
        [r.attempt.error for r in rows],
        [_head(r.attempt.response_head) for r in rows],
        [outcome_of(r.decision) for r in rows],
        [r.decision.next_attempt_at for r in rows],
    )
    await conn.execute(
        """
        UPDATE webhook_endpoints e
           SET failing_since = CASE WHEN u.succeeded THEN NULL
                                    ELSE coalesce(e.failing_since, u.failed_at) END,
               enabled = e.enabled AND u.disable IS NULL,
               disabled_reason = coalesce(u.disable, e.disabled_reason),
               disabled_at = CASE WHEN u.disable IS NULL THEN e.disabled_at
                                  ELSE u.at END,
               updated_at = u.at
          FROM unnest($1::uuid[], $2::bool[], $3::timestamptz[], $4::text[],
                      $5::timestamptz[]) AS u (id, succeeded, failed_at, disable, at)
         WHERE e.id = u.id
        """,
        [c.endpoint_id for c in endpoints],
        [c.succeeded for c in endpoints],
        [c.failed_at for c in endpoints],
        [c.disable for c in endpoints],
        [c.at for c in endpoints],
    )
    disabled = [c.endpoint_id for c in endpoints if c.disable is not None]
    if disabled:
        await conn.execute(
            "UPDATE webhook_deliveries SET status = 'failed', lease_until = NULL,"
            " updated_at = now() WHERE endpoint_id = ANY($1::uuid[])"
            " AND status = 'pending'",
            disabled,
        )
