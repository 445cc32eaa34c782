"""Webhook endpoint changes with their audit record, one transaction each.

The API's ``/webhooks`` routes (a key) and the console's Webhooks page (a user) call
these instead of ``adapters.postgres.webhook_endpoints`` directly: each runs the store's change
and appends its audit record (``webhook.create``, ``webhook.update``,
``webhook.delete``, ``webhook.rotate_secret``, ``webhook.test``,
``webhook.redeliver``, ``webhook.recover``) on the caller's connection in one
transaction, so the log holds exactly the changes that were made. A change that
finds nothing (no such endpoint for the client and mode) writes nothing. Secrets and
sealed values are never put in a record.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from intentd.access.actors import Actor
from intentd.adapters.postgres import Connection, audit_log
from intentd.adapters.postgres import webhook_endpoints as store
from intentd.adapters.postgres.audit_log import AuditEntry
from intentd.adapters.postgres.webhook_endpoints import Endpoint
from intentd.webhooks.secret_box import SecretBox

__all__ = ["create", "delete", "recover", "redeliver", "rotate_secret", "send_test", "update"]


async def _record(
    conn: Connection,
    actor: Actor,
    action: str,
    endpoint_id: UUID,
    *,
    mode: str,
    detail: dict[str, Any] | None = None,
) -> None:
    entry = AuditEntry(f"webhook.{action}", "webhook", str(endpoint_id), "ok", mode, detail or {})
    await audit_log.record(conn, actor, entry)


async def create(
    conn: Connection,
    box: SecretBox,
    actor: Actor,
    *,
    mode: str,
    url: str,
    event_types: list[str] | None,
    description: str,
    max_endpoints: int | None,
) -> tuple[Endpoint, str]:
    async with conn.transaction():
        endpoint, secret = await store.create(
            conn,
            box,
            client_id=actor.client_id,
            mode=mode,
            url=url,
            event_types=event_types,
            description=description,
            max_endpoints=max_endpoints,
        )
        detail = {"url": url, "event_types": event_types, "description": description}
        await _record(conn, actor, "create", endpoint.id, mode=mode, detail=detail)
    return endpoint, secret


async def update(
    conn: Connection,
    actor: Actor,
    mode: str,
    endpoint_id: UUID,
    changes: dict[str, Any],
    *,
    now: datetime,
) -> Endpoint | None:
    async with conn.transaction():
        endpoint = await store.update(conn, actor.client_id, mode, endpoint_id, changes, now=now)
        if endpoint is not None:
            await _record(conn, actor, "update", endpoint_id, mode=mode, detail=dict(changes))
    return endpoint


async def delete(conn: Connection, actor: Actor, mode: str, endpoint_id: UUID) -> bool:
    async with conn.transaction():
        deleted = await store.delete(conn, actor.client_id, mode, endpoint_id)
        if deleted:
            await _record(conn, actor, "delete", endpoint_id, mode=mode)
    return deleted


async def rotate_secret(
    conn: Connection,
    box: SecretBox,
    actor: Actor,
    mode: str,
    endpoint_id: UUID,
    *,
    now: datetime,
    overlap: timedelta,
) -> tuple[Endpoint, str] | None:
    async with conn.transaction():
        rotated = await store.rotate_secret(
            conn, box, actor.client_id, mode, endpoint_id, now=now, overlap=overlap
        )
        if rotated is not None:
            detail = {"previous_secret_expires_at": (now + overlap).isoformat()}
            await _record(conn, actor, "rotate_secret", endpoint_id, mode=mode, detail=detail)
    return rotated


async def send_test(
    conn: Connection, actor: Actor, endpoint: Endpoint, now: datetime
) -> tuple[str, int]:
    async with conn.transaction():
        event_id, delivery_id = await store.send_test(conn, endpoint, now)
        detail = {"event_id": event_id, "delivery_id": delivery_id}
        await _record(conn, actor, "test", endpoint.id, mode=endpoint.mode, detail=detail)
    return event_id, delivery_id


async def redeliver(
    conn: Connection, actor: Actor, endpoint: Endpoint, delivery_id: int, now: datetime
) -> bool:
    async with conn.transaction():
        found = await store.redeliver(conn, endpoint.id, delivery_id, now)
        if found:
            detail = {"delivery_id": delivery_id}
            await _record(conn, actor, "redeliver", endpoint.id, mode=endpoint.mode, detail=detail)
    return found


async def recover(
    conn: Connection,
    actor: Actor,
    endpoint: Endpoint,
    *,
    since: datetime,
    until: datetime,
    now: datetime,
) -> int:
    async with conn.transaction():
        count = await store.recover(conn, endpoint.id, since, until, now)
        detail = {"since": since.isoformat(), "until": until.isoformat(), "recovered": count}
        await _record(conn, actor, "recover", endpoint.id, mode=endpoint.mode, detail=detail)
    return count
