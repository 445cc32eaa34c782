"""Clients in PostgreSQL (``clients``, migration 0012): create, find, list.

A client is the tenant every one of its keys acts for: they see the same intents,
events and webhooks. A key is created for an existing client only
(``api_keys.insert_key``), so a mistyped name is an error instead of a new, empty
tenant. New clients get a random id; clients that existed before the table was
added keep theirs (the migration's backfill).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID, uuid4

import asyncpg

from intentd.adapters.postgres import Connection

__all__ = ["Client", "ClientExists", "create", "find", "list_clients"]

_COLUMNS = "id, name, created_at"


class ClientExists(Exception):
    """A client of that name exists already (``existing``)."""

    def __init__(self, existing: Client) -> None:
        super().__init__(f"a client named {existing.name!r} exists already ({existing.id})")
        self.existing = existing


@dataclass(frozen=True, slots=True)
class Client:
    id: UUID
    name: str
    created_at: datetime


def _client(record: asyncpg.Record) -> Client:
    return Client(**dict(record))


async def create(conn: Connection, name: str) -> Client:
    """A new client named ``name``; :class:`ClientExists` if the name is taken."""
    record = await conn.fetchrow(
        f"INSERT INTO clients (id, name) VALUES ($1, $2)"
        f" ON CONFLICT (name) DO NOTHING RETURNING {_COLUMNS}",
        uuid4(),
        name,
    )
    if record is None:
        existing = await find(conn, name)
        assert existing is not None  # clients are never deleted
        raise ClientExists(existing)
    return _client(record)


async def find(conn: Connection, ref: str) -> Client | None:
    """The client whose id (a UUID) or else name is ``ref``."""
    try:
        by_id = await conn.fetchrow(f"SELECT {_COLUMNS} FROM clients WHERE id = $1", UUID(ref))
    except ValueError:
        by_id = None
    if by_id is not None:
        return _client(by_id)
    record = await conn.fetchrow(f"SELECT {_COLUMNS} FROM clients WHERE name = $1", ref)
    return _client(record) if record is not None else None


async def list_clients(conn: Connection) -> list[Client]:
    records = await conn.fetch(f"SELECT {_COLUMNS} FROM clients ORDER BY created_at, name")
    return [_client(r) for r in records]
