"""Webhook endpoints as the API manages them (PostgreSQL): register, read, change,
delete, rotate the secret, send a test event, list attempts, redeliver, recover.

Every function is scoped to one client and mode: an endpoint of another client or
mode is reported as absent. Secrets are stored sealed (``webhooks.secret_box``) and
returned only by :func:`create` and :func:`rotate_secret`, once. :func:`create` keeps a
client under its maximum of endpoints per mode even when several creates run at once
(they take the client's lock in turn).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from intentd.adapters.postgres import Connection
from intentd.adapters.postgres.webhook_store import CHANNEL
from intentd.contract.events import TEST_EVENT_TYPE, webhook_test_envelope
from intentd.webhooks.secret_box import SecretBox
from intentd.webhooks.signing import new_secret

__all__ = [
    "AttemptRow",
    "Endpoint",
    "TooManyEndpoints",
    "create",
    "delete",
    "get",
    "list_attempts",
    "list_endpoints",
    "recover",
    "redeliver",
    "rotate_secret",
    "send_test",
    "update",
]

_CREATE_LOCK = 0x1A7E_0E10
"""First key of the two-key advisory lock a create holds; the second is the client's."""
_COLUMNS = (
    "id, client_id, mode, url, description, event_types, enabled, disabled_reason,"
    " disabled_at, failing_since, previous_secret_expires_at, created_at, updated_at"
)


@dataclass(frozen=True, slots=True)
class Endpoint:
    id: UUID
    client_id: UUID
    mode: str
    url: str
    description: str
    event_types: list[str] | None
    enabled: bool
    disabled_reason: str | None
    disabled_at: datetime | None
    failing_since: datetime | None
    previous_secret_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class AttemptRow:
    id: int
    delivery_id: int
    event_id: str
    event_type: str
    delivery_status: str
    attempted_at: datetime
    status_code: int | None
    latency_ms: int
    error: str | None
    response_head: str
    outcome: str
    next_attempt_at: datetime | None


class TooManyEndpoints(Exception):
    """The client already has its maximum of endpoints in this mode."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a client may have {limit} webhook endpoints in each mode")
        self.limit = limit


def _endpoint(record: asyncpg.Record) -> Endpoint:
    data = dict(record)
    data["event_types"] = list(data["event_types"]) if data["event_types"] is not None else None
    return Endpoint(**data)


async def create(
    conn: Connection,
    box: SecretBox,
    *,
    client_id: UUID,
    mode: str,
    url: str,
    event_types: list[str] | None,
    description: str,
    max_endpoints: int | None = None,
) -> tuple[Endpoint, str]:
    """The new endpoint and its secret (shown once); :class:`TooManyEndpoints` if the
    client has ``max_endpoints`` in ``mode`` already (enabled or not; None: no limit)."""
    endpoint_id = uuid.uuid4()
    secret = new_secret()
    async with conn.transaction():
        if max_endpoints is not None:
            await conn.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2::uuid::text))",
                _CREATE_LOCK,
                client_id,
            )
            count = await conn.fetchval(
                "SELECT count(*) FROM webhook_endpoints WHERE client_id = $1 AND mode = $2",
                client_id,
                mode,
            )
            if count >= max_endpoints:
                raise TooManyEndpoints(max_endpoints)
        record = await conn.fetchrow(
            f"""
            INSERT INTO webhook_endpoints
                   (id, client_id, mode, url, description, event_types, secret_sealed)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            RETURNING {_COLUMNS}
            """,
            endpoint_id,
            client_id,
            mode,
            url,
            description,
            event_types,
            box.seal(secret, endpoint_id),
        )
    assert record is not None
    return _endpoint(record), secret


async def get(conn: Connection, client_id: UUID, mode: str, endpoint_id: UUID) -> Endpoint | None:
    record = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND client_id = $2 AND mode = $3",
        endpoint_id,
        client_id,
        mode,
    )
    return _endpoint(record) if record is not None else None


async def list_endpoints(
    conn: Connection, client_id: UUID, mode: str, *, after: tuple[datetime, UUID] | None, limit: int
) -> list[Endpoint]:
    """Oldest first, ``limit`` after the cursor ``(created_at, id)``."""
    records = await conn.fetch(
        f"""
        SELECT {_COLUMNS} FROM webhook_endpoints
         WHERE client_id = $1 AND mode = $2
           AND ($3::timestamptz IS NULL OR (created_at, id) > ($3, $4::uuid))
         ORDER BY created_at, id LIMIT $5
        """,
        client_id,
        mode,
        after[0] if after else None,
        after[1] if after else None,
        limit,
    )
    return [_endpoint(r) for r in records]


async def update(
    conn: Connection,
    client_id: UUID,
    mode: str,
    endpoint_id: UUID,
    changes: dict[str, Any],
    *,
    now: datetime,
) -> Endpoint | None:
    """Apply ``changes`` (``url``, ``description``, ``event_types``, ``enabled``);
    enabling clears the disabled reason and the failure run, disabling records
    ``client`` as the reason."""
    record = await conn.fetchrow(
        f"""
        UPDATE webhook_endpoints SET
               url = CASE WHEN $4 THEN $5 ELSE url END,
               description = CASE WHEN $6 THEN $7 ELSE description END,
               event_types = CASE WHEN $8 THEN $9::text[] ELSE event_types END,
               enabled = coalesce($10, enabled),
               disabled_reason = CASE WHEN $10 IS NULL THEN disabled_reason
                                      WHEN $10 THEN NULL
                                      WHEN enabled THEN 'client' ELSE disabled_reason END,
               disabled_at = CASE WHEN $10 IS NULL THEN disabled_at
                                  WHEN $10 THEN NULL
                                  WHEN enabled THEN $11 ELSE disabled_at END,
               failing_since = CASE WHEN $10 AND NOT enabled THEN NULL ELSE failing_since END,
               updated_at = $11
         WHERE id = $1 AND client_id = $2 AND mode = $3
        RETURNING {_COLUMNS}
        """,
        endpoint_id,
        client_id,
        mode,
        "url" in changes,
        changes.get("url"),
        "description" in changes,
        changes.get("description"),
        "event_types" in changes,
        changes.get("event_types"),
        changes.get("enabled"),
        now,
    )
    return _endpoint(record) if record is not None else None


async def delete(conn: Connection, client_id: UUID, mode: str, endpoint_id: UUID) -> bool:
    """Delete the endpoint with its deliveries and attempts."""
    status: str = await conn.execute(
        "DELETE FROM webhook_endpoints WHERE id = $1 AND client_id = $2 AND mode = $3",
        endpoint_id,
        client_id,
        mode,
    )
    return status.endswith(" 1")


async def rotate_secret(
    conn: Connection,
    box: SecretBox,
    client_id: UUID,
    mode: str,
    endpoint_id: UUID,
    *,
    now: datetime,
    overlap: timedelta,
) -> tuple[Endpoint, str] | None:
    """A new secret; the current one keeps signing until ``now + overlap``."""
    secret = new_secret()
    record = await conn.fetchrow(
        f"""
        UPDATE webhook_endpoints
           SET previous_secret_sealed = secret_sealed, previous_secret_expires_at = $5,
               secret_sealed = $4, updated_at = $6
         WHERE id = $1 AND client_id = $2 AND mode = $3
        RETURNING {_COLUMNS}
        """,
        endpoint_id,
        client_id,
        mode,
        box.seal(secret, endpoint_id),
        now + overlap,
        now,
    )
    return (_endpoint(record), secret) if record is not None else None


async def send_test(conn: Connection, endpoint: Endpoint, now: datetime) -> tuple[str, int]:
    """Record a ``webhook_test`` event for ``endpoint`` alone, due now; (event id,
    delivery id)."""
    event_id = str(uuid.uuid4())
    body = webhook_test_envelope(event_id, str(endpoint.id), endpoint.mode, now)
    async with conn.transaction():
        await conn.execute(
            "INSERT INTO webhook_events (id, type, client_id, mode, intent_id, sequence,"
            " created_at, body) VALUES ($1, $2, $3, $4, NULL, 0, $5, $6)",
            event_id,
            TEST_EVENT_TYPE,
            endpoint.client_id,
            endpoint.mode,
            now,
            orjson.dumps(body),
        )
        delivery_id = await conn.fetchval(
            "INSERT INTO webhook_deliveries (event_id, endpoint_id, intent_id, sequence,"
            " event_created_at, next_attempt_at) VALUES ($1, $2, NULL, 0, $3, $3) RETURNING id",
            event_id,
            endpoint.id,
            now,
        )
        await conn.execute("SELECT pg_notify($1, '')", CHANNEL)
    return event_id, int(delivery_id)


async def list_attempts(
    conn: Connection, endpoint_id: UUID, *, before: int | None, limit: int
) -> list[AttemptRow]:
    """Newest first, ``limit`` attempts with ids below ``before``."""
    records = await conn.fetch(
        """
        SELECT a.id, a.delivery_id, d.event_id, ev.type AS event_type,
               d.status AS delivery_status, a.attempted_at, a.status_code, a.latency_ms,
               a.error, a.response_head, a.outcome, a.next_attempt_at
          FROM webhook_attempts a
          JOIN webhook_deliveries d ON d.id = a.delivery_id
          JOIN webhook_events ev ON ev.id = d.event_id
         WHERE a.endpoint_id = $1 AND ($2::bigint IS NULL OR a.id < $2)
         ORDER BY a.id DESC LIMIT $3
        """,
        endpoint_id,
        before,
        limit,
    )
    return [AttemptRow(**dict(r)) for r in records]


async def redeliver(conn: Connection, endpoint_id: UUID, delivery_id: int, now: datetime) -> bool:
    """Make the delivery due now with a fresh round of retries (whatever its status);
    False if the endpoint has no such delivery."""
    status: str = await conn.execute(
        """
        UPDATE webhook_deliveries
           SET status = 'pending', round_attempts = 0, next_attempt_at = $3, updated_at = $3
         WHERE id = $2 AND endpoint_id = $1
        """,
        endpoint_id,
        delivery_id,
        now,
    )
    if status.endswith(" 1"):
        await conn.execute("SELECT pg_notify($1, '')", CHANNEL)
        return True
    return False


async def recover(
    conn: Connection, endpoint_id: UUID, since: datetime, until: datetime, now: datetime
) -> int:
    """Make every failed delivery of events created in ``[since, until)`` due now."""
    status: str = await conn.execute(
        """
        UPDATE webhook_deliveries
           SET status = 'pending', round_attempts = 0, next_attempt_at = $4, updated_at = $4
         WHERE endpoint_id = $1 AND status = 'failed'
           AND event_created_at >= $2 AND event_created_at < $3
        """,
        endpoint_id,
        since,
        until,
        now,
    )
    count = int(status.rsplit(maxsplit=1)[-1])
    if count:
        await conn.execute("SELECT pg_notify($1, '')", CHANNEL)
    return count
