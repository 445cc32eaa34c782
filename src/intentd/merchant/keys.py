"""API keys made and revoked by a person (a console user, the operator's CLI), each with
its audit record in the same transaction. The secret is returned once and never
stored nor recorded (only its hash, ``adapters.postgres.api_keys``)."""

from __future__ import annotations

from uuid import UUID

from intentd.access.actors import Actor
from intentd.adapters.postgres import Connection, api_keys, audit_log
from intentd.adapters.postgres.api_keys import ApiKey
from intentd.adapters.postgres.audit_log import AuditEntry
from intentd.adapters.postgres.clients import Client
from intentd.contract.mode import Mode
from intentd.credentials import generate_key

__all__ = ["create_key", "revoke_key"]


async def create_key(
    conn: Connection,
    actor: Actor,
    client: Client,
    *,
    mode: Mode,
    scopes: frozenset[str] | None,
    rate_limit: int | None,
) -> tuple[ApiKey, str]:
    """A new key of ``client`` and its secret (shown once)."""
    new = generate_key(mode)
    async with conn.transaction():
        key = await api_keys.insert_key(
            conn, new, client=client, mode=mode, rate_limit=rate_limit, scopes=scopes
        )
        detail = {
            "prefix": key.prefix,
            "scopes": sorted(scopes) if scopes is not None else "all",
            "rate_limit": rate_limit,
        }
        await audit_log.record(
            conn, actor, AuditEntry("key.create", "api_key", str(key.id), "ok", mode, detail)
        )
    return key, new.key


async def revoke_key(
    conn: Connection, actor: Actor, key_id: UUID, *, client_id: UUID | None
) -> ApiKey | None:
    """Revoke the key (of ``client_id``, if given); None if there is none. A key already
    revoked is answered as it is, and not recorded again."""
    async with conn.transaction():
        before = await api_keys.find_by_id(conn, key_id)
        if before is None or (client_id is not None and before.client_id != client_id):
            return None
        revoked = await api_keys.revoke(conn, key_id, client_id)
        if revoked is not None and before.revoked_at is None:
            entry = AuditEntry(
                "key.revoke", "api_key", str(key_id), "ok", revoked.mode, {"prefix": revoked.prefix}
            )
            await audit_log.record(
                conn,
                Actor(
                    actor.kind, actor.id, actor.label, revoked.client_id, actor.source, actor.role
                ),
                entry,
            )
    return revoked
