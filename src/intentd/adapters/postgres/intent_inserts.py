"""Creating intents in PostgreSQL: the intent writer's store (``intents.ports.IntentStore``).

Guarantees:

- :func:`insert_intents` writes a group of intents in one statement; an item whose
  client already used its ``idempotency_key`` (before, or earlier in the group) is not
  written, and :func:`find_by_idempotency_key` finds what was.
- :class:`PostgresIntentStore`'s capped insert counts a client's PENDING intents and
  inserts in one transaction under an advisory lock per client, so a client's cap
  holds whatever process creates.
- :class:`AddressIndexes` hands out HD address indexes from the database's sequence,
  a block at a time; an index is never given twice.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import fields
from typing import Any
from uuid import UUID

import asyncpg

from intentd.adapters.postgres import Connection, Pool
from intentd.adapters.postgres.intent_store import COLUMNS, row_of
from intentd.contract.record import IntentRow
from intentd.intents.open_limit import refused
from intentd.intents.ports import AddressedIntent, NewIntent, NoConnection

__all__ = [
    "AddressIndexes",
    "ConnectionSession",
    "PostgresIntentStore",
    "find_by_idempotency_key",
    "insert_intents",
]


class AddressIndexes:
    """Derivation indexes drawn from the sequence ``block`` at a time (or as many as
    asked, if more), handed out in order: a long-lived process then rarely spends a
    round trip on an index.

    Each index is still handed out once only. Indexes drawn but not used when the
    process stops are never used: a gap, like a failed insert's, so ``intent_nonce``
    is unique and increasing per process but neither dense nor ordered across
    processes. ``block=1`` draws exactly what is asked (a short-lived process).
    """

    def __init__(self, block: int = 64) -> None:
        if block < 1:
            raise ValueError("block must be at least 1")
        self._block = block
        self._drawn: deque[int] = deque()

    async def take(self, conn: Connection, count: int) -> list[int]:
        """``count`` indexes never handed out before."""
        while len(self._drawn) < count:  # a concurrent take may empty it meanwhile
            records = await conn.fetch(
                "SELECT nextval('intent_address_index_seq') FROM generate_series(1, $1)",
                max(self._block, count - len(self._drawn)),
            )
            self._drawn.extend(int(r[0]) for r in records)
        return [self._drawn.popleft() for _ in range(count)]


class PostgresIntentStore:
    """The intent writer's store (``intents.ports.IntentStore``): a connection of
    ``pool`` per write, indexes drawn through ``indexes`` (one a time by default)."""

    def __init__(self, pool: Pool, indexes: AddressIndexes | None = None) -> None:
        self._pool = pool
        self._indexes = indexes if indexes is not None else AddressIndexes(block=1)

    @asynccontextmanager
    async def session(self, *, within: float | None = None) -> AsyncIterator[ConnectionSession]:
        try:
            conn = await self._pool.acquire(timeout=within)
        except TimeoutError:
            raise NoConnection(f"no connection within {within} s") from None
        try:
            yield ConnectionSession(conn, self._indexes)
        finally:
            await self._pool.release(conn)

    async def find_by_idempotency_key(
        self, client_id: UUID, key: str
    ) -> tuple[IntentRow, str] | None:
        async with self._pool.acquire() as conn:
            return await find_by_idempotency_key(conn, client_id, key)

    def refuses_row(self, error: Exception) -> bool:
        return isinstance(error, asyncpg.DataError | asyncpg.IntegrityConstraintViolationError)

    def answered_with_error(self, error: Exception) -> bool:
        return isinstance(error, asyncpg.PostgresError)


class ConnectionSession:
    """The writer's session (``intents.ports.IntentSession``) on one connection.

    The transaction of :meth:`insert_within` holds its clients' locks to its commit;
    the server ends it if it waits ``idle_limit`` seconds for our next statement (a
    link that stalled mid-transaction would otherwise hold those clients' creates
    until TCP gives up, hours later). It is rolled back then: the create was answered
    with an error, and its retry with the same ``Idempotency-Key`` writes it."""

    def __init__(
        self, conn: Connection, indexes: AddressIndexes, *, idle_limit: float = 10.0
    ) -> None:
        self._conn = conn
        self._indexes = indexes
        self._idle_limit = str(max(1, round(idle_limit * 1000)))

    async def take_indexes(self, count: int) -> list[int]:
        return await self._indexes.take(self._conn, count)

    async def insert(self, items: Sequence[AddressedIntent]) -> dict[int, IntentRow]:
        return await insert_intents(self._conn, items)

    async def insert_within(
        self, items: Sequence[AddressedIntent], max_pending: int
    ) -> tuple[dict[int, IntentRow], frozenset[int]]:
        clients = [item.new.client_id for item in items]
        async with self._conn.transaction():
            # One lock per client, taken in key order (no deadlock between two writes),
            # held to the commit; the count below is a statement of its own, so its
            # snapshot sees every create committed by the lock's previous holder.
            await self._conn.execute(
                _LOCK_CLIENTS, _CREATE_LOCK, sorted(set(map(_key, clients))), self._idle_limit
            )
            counted = await self._conn.fetch(_PENDING, sorted(set(clients)))
            over = refused(clients, {r["client_id"]: r["pending"] for r in counted}, max_pending)
            fitting = [item for item, no in zip(items, over, strict=True) if not no]
            written = await insert_intents(self._conn, fitting) if fitting else {}
        return written, frozenset(i.address_index for i, no in zip(items, over, strict=True) if no)


_CREATE_LOCK = 0x1A7E_0C01
"""First key of the two-key advisory lock that serializes a client's creates; the
second is :func:`_key` of the client."""
_LOCK_CLIENTS = """
    SELECT count(pg_advisory_xact_lock($1, k)) FROM unnest($2::int[]) AS k
     WHERE set_config('idle_in_transaction_session_timeout', $3, true) IS NOT NULL
"""
"""The clients' locks, and the transaction's idle limit (``SET LOCAL``: this
transaction only), in one round trip."""
_PENDING = """
    SELECT client_id, count(*) AS pending FROM intents
     WHERE client_id = ANY($1::uuid[]) AND status = 'PENDING'
     GROUP BY client_id
"""
"""Each client's PENDING intents: a range of ``intents_list_status`` (client, status, ...)."""


def _key(client: UUID) -> int:
    """The client's second lock key: its first 32 bits (two clients that share them
    only wait for each other)."""
    return int.from_bytes(client.bytes[:4], "big", signed=True)


_SQL_TYPES = {
    "client_id": "uuid",
    "token_out_decimals": "integer",
    "asset_token_decimals": "integer",
    "total_due": "numeric",
    "fees_in_asset": "numeric",
    "app_fee_in_asset": "numeric",
    "amount_out": "numeric",
    "fees_in_usd": "numeric",
    "app_fee_in_usd": "numeric",
    "total_in_usd": "numeric",
    "slippage": "numeric",
    "owed_amount": "numeric",
    "address_index": "bigint",
    "metadata": "jsonb",
    "prices": "jsonb",
    "expires_at": "timestamptz",
}
"""The array type of an inserted column that is not ``text``."""
_INSERTED = tuple(
    (name, _SQL_TYPES.get(name, "text"))
    for name in (*(field.name for field in fields(NewIntent)), "address_index", "intent_address")
)
"""Column name and array type of each inserted value: the fields of :class:`NewIntent`
and the two of :class:`AddressedIntent` beside it."""
_NAMES = ", ".join(name for name, _ in _INSERTED)
_INSERT_MANY = f"""
    INSERT INTO intents ({_NAMES}, status)
    SELECT {_NAMES}, 'PENDING'
    FROM unnest({", ".join(f"${i}::{kind}[]" for i, (_, kind) in enumerate(_INSERTED, 1))})
        AS new ({_NAMES})
    ON CONFLICT (client_id, idempotency_key) DO NOTHING
    RETURNING {COLUMNS}
"""


def _new_values(item: AddressedIntent) -> tuple[Any, ...]:
    """The row's values, in the order of ``_INSERTED``."""
    return tuple(_new_value(item, name) for name, _ in _INSERTED)


def _new_value(item: AddressedIntent, name: str) -> Any:
    if name in ("address_index", "intent_address"):
        return getattr(item, name)
    value = getattr(item.new, name)
    if name in ("metadata", "prices") and value is not None:
        return json.dumps(value)
    return value


async def insert_intents(
    conn: Connection, items: Sequence[AddressedIntent]
) -> dict[int, IntentRow]:
    """Insert ``items`` with one statement; the rows written, by address index.

    An item whose client already used its ``idempotency_key`` (before, or earlier in
    ``items``) is not written and has no row in the answer.
    """
    columns = list(zip(*(_new_values(item) for item in items), strict=True))
    records = await conn.fetch(_INSERT_MANY, *columns)
    return {int(record["address_index"]): row_of(record) for record in records}


async def find_by_idempotency_key(
    conn: Connection, client_id: UUID, key: str
) -> tuple[IntentRow, str] | None:
    """The intent a client created with ``key``, and the hash of that request."""
    record = await conn.fetchrow(
        f"SELECT {COLUMNS}, request_hash FROM intents"
        " WHERE client_id = $1 AND idempotency_key = $2",
        client_id,
        key,
    )
    if record is None:
        return None
    data = dict(record)
    request_hash = data.pop("request_hash")
    return row_of(data), request_hash  # type: ignore[arg-type]
