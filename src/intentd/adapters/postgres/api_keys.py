"""API keys in PostgreSQL (asyncpg): create, look up by hash or id, revoke, list.

Only the SHA-256 of a key is stored (see ``intentd.credentials``). A key belongs
to an existing client (``adapters.postgres.clients``; a foreign key since migration 0012).
A key's scopes (migration 0019, ``access.scopes``) are None for a key with every
scope, as every key made before scopes has.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4, uuid5

import asyncpg

from intentd.adapters.postgres import Connection
from intentd.adapters.postgres.clients import Client
from intentd.contract.mode import Mode
from intentd.credentials import NewKey

__all__ = [
    "ApiKey",
    "client_id_of",
    "find_by_hash",
    "find_by_id",
    "insert_key",
    "list_keys",
    "revoke",
]

_CLIENTS = UUID("7f0c7a52-3b0e-4c61-9d43-2a6f5e1b9c10")
_COLUMNS = "id, client_id, client_name, mode, prefix, rate_limit, created_at, revoked_at, scopes"


def client_id_of(client_name: str) -> UUID:
    """The id a client named ``client_name`` had before clients were records (its keys
    derived it from the name; migration 0012 keeps it). New clients get random ids
    (``adapters.postgres.clients``); tests still use this for a stable, named client id."""
    return uuid5(_CLIENTS, client_name)


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: UUID
    client_id: UUID
    client_name: str
    mode: Mode
    prefix: str
    rate_limit: int | None
    """Requests per second; None means the deployment's default."""
    created_at: datetime
    revoked_at: datetime | None
    scopes: frozenset[str] | None = None
    """The scopes the key holds (``access.scopes``); None: every scope."""

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def _key(record: asyncpg.Record) -> ApiKey:
    values: dict[str, Any] = dict(record)
    scopes = values.pop("scopes")
    return ApiKey(**values, scopes=frozenset(scopes) if scopes is not None else None)


async def insert_key(
    conn: Connection,
    new: NewKey,
    *,
    client: Client,
    mode: Mode,
    rate_limit: int | None,
    scopes: frozenset[str] | None = None,
) -> ApiKey:
    """Store ``new`` for ``client`` (which must exist: the foreign key refuses others);
    ``scopes`` None: every scope."""
    record = await conn.fetchrow(
        f"""
        INSERT INTO api_keys
               (id, client_id, client_name, mode, prefix, key_hash, rate_limit, scopes)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        RETURNING {_COLUMNS}
        """,
        uuid4(),
        client.id,
        client.name,
        mode,
        new.prefix,
        new.key_hash,
        rate_limit,
        sorted(scopes) if scopes is not None else None,
    )
    assert record is not None
    return _key(record)


async def find_by_hash(conn: Connection, key_hash: str) -> ApiKey | None:
    record = await conn.fetchrow(f"SELECT {_COLUMNS} FROM api_keys WHERE key_hash = $1", key_hash)
    return _key(record) if record is not None else None


async def find_by_id(conn: Connection, key_id: UUID) -> ApiKey | None:
    record = await conn.fetchrow(f"SELECT {_COLUMNS} FROM api_keys WHERE id = $1", key_id)
    return _key(record) if record is not None else None


async def revoke(conn: Connection, key_id: UUID, client_id: UUID | None = None) -> ApiKey | None:
    """Revoke the key (idempotent); None if there is no such key (of ``client_id``, if
    given)."""
    record = await conn.fetchrow(
        f"""
        UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
         WHERE id = $1 AND ($2::uuid IS NULL OR client_id = $2)
        RETURNING {_COLUMNS}
        """,
        key_id,
        client_id,
    )
    return _key(record) if record is not None else None


async def list_keys(conn: Connection, client_id: UUID | None = None) -> list[ApiKey]:
    """Every key (of ``client_id``, if given), oldest first."""
    records = await conn.fetch(
        f"SELECT {_COLUMNS} FROM api_keys WHERE ($1::uuid IS NULL OR client_id = $1)"
        " ORDER BY created_at",
        client_id,
    )
    return [_key(r) for r in records]
