"""Intents in PostgreSQL: insert, load, lock, save (asyncpg).

Functions take a connection so the caller decides the transaction. Saving is a
compare-and-set on ``event_sequence``: a save whose intent changed underneath it
fails with :class:`ConcurrentUpdate` instead of overwriting.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import asyncpg

from intentd.domain.intent import Intent
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.intents.record import IntentRow

Connection = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy


class ConcurrentUpdate(Exception):
    """The intent changed between load and save."""


@dataclass(frozen=True, slots=True)
class NewIntent:
    client_id: UUID
    idempotency_key: str | None
    request_hash: str
    sender: str | None
    initial_amount: str
    amount_symbol: str | None
    source_chain: str
    destination_chain: str
    token_in: str
    token_out: str
    token_out_decimals: int
    asset_token_symbol: str
    asset_token_decimals: int
    total_due: int
    fees_in_asset: int
    app_fee_in_asset: int
    amount_out: int
    fees_in_usd: Decimal
    app_fee_in_usd: Decimal
    total_in_usd: Decimal | None
    slippage: Decimal
    recipient: str
    refund_address: str
    coordinator: str
    bridger: str
    metadata: dict[str, Any]
    expires_at: datetime
    session_id: str | None = None
    """The payment-modal session the intent was created in, if any."""


_COLUMNS = """
    id, client_id, sender, initial_amount, amount_symbol, source_chain, destination_chain,
    token_in, token_out, token_out_decimals, asset_token_symbol, asset_token_decimals,
    total_due, fees_in_asset, app_fee_in_asset, amount_out, fees_in_usd, app_fee_in_usd,
    total_in_usd, slippage, address_index, intent_address, recipient, refund_address,
    relayer, coordinator, bridger, bridge_extra_data, status, funding_status, received,
    tx_hash, needs_relay, event_sequence, version, metadata, expires_at, created_at, updated_at,
    session_id
"""


def _row(record: asyncpg.Record) -> IntentRow:
    data = dict(record)
    for key in ("total_due", "fees_in_asset", "app_fee_in_asset", "amount_out", "received"):
        data[key] = int(data[key])
    data["status"] = IntentStatus(data["status"])
    data["funding_status"] = FundingStatus(data["funding_status"])
    data["metadata"] = json.loads(data["metadata"])
    return IntentRow(**data)


async def next_address_index(conn: Connection) -> int:
    """A derivation index never handed out before (sequences never roll back)."""
    value = await conn.fetchval("SELECT nextval('intent_address_index_seq')")
    return int(value)


class AddressIndexes:
    """Derivation indexes drawn from the sequence ``block`` at a time, handed out one
    by one: a create then costs no round trip for its index (one process's cache).

    Each index is still handed out once only. Indexes drawn but not used when the
    process stops are never used: a gap, like a failed insert's, so ``intent_nonce``
    is unique and increasing per process but neither dense nor ordered across
    processes.
    """

    def __init__(self, block: int = 64) -> None:
        if block < 1:
            raise ValueError("block must be at least 1")
        self._block = block
        self._drawn: deque[int] = deque()

    async def next(self, conn: Connection) -> int:
        if not self._drawn:
            records = await conn.fetch(
                "SELECT nextval('intent_address_index_seq') FROM generate_series(1, $1)",
                self._block,
            )
            self._drawn.extend(int(r[0]) for r in records)
        return self._drawn.popleft()


async def insert_intent(
    conn: Connection, new: NewIntent, *, address_index: int, intent_address: str
) -> IntentRow | None:
    """Insert; None if the client already used ``idempotency_key`` (nothing written)."""
    record = await conn.fetchrow(
        f"""
        INSERT INTO intents (
            client_id, idempotency_key, request_hash, sender, initial_amount, amount_symbol,
            source_chain, destination_chain, token_in, token_out, token_out_decimals,
            asset_token_symbol, asset_token_decimals, total_due, fees_in_asset,
            app_fee_in_asset, amount_out, fees_in_usd, app_fee_in_usd, total_in_usd, slippage,
            address_index, intent_address, recipient, refund_address, coordinator, bridger,
            status, metadata, expires_at, session_id
        ) VALUES (
            $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
            $19, $20, $21, $22, $23, $24, $25, $26, $27, 'PENDING', $28::jsonb, $29, $30
        )
        ON CONFLICT (client_id, idempotency_key) DO NOTHING
        RETURNING {_COLUMNS}
        """,
        new.client_id,
        new.idempotency_key,
        new.request_hash,
        new.sender,
        new.initial_amount,
        new.amount_symbol,
        new.source_chain,
        new.destination_chain,
        new.token_in,
        new.token_out,
        new.token_out_decimals,
        new.asset_token_symbol,
        new.asset_token_decimals,
        new.total_due,
        new.fees_in_asset,
        new.app_fee_in_asset,
        new.amount_out,
        new.fees_in_usd,
        new.app_fee_in_usd,
        new.total_in_usd,
        new.slippage,
        address_index,
        intent_address,
        new.recipient,
        new.refund_address,
        new.coordinator,
        new.bridger,
        json.dumps(new.metadata),
        new.expires_at,
        new.session_id,
    )
    return _row(record) if record is not None else None


async def find_by_idempotency_key(
    conn: Connection, client_id: UUID, key: str
) -> tuple[IntentRow, str] | None:
    """The intent a client created with ``key``, and the hash of that request."""
    record = await conn.fetchrow(
        f"SELECT {_COLUMNS}, request_hash FROM intents"
        " WHERE client_id = $1 AND idempotency_key = $2",
        client_id,
        key,
    )
    if record is None:
        return None
    data = dict(record)
    request_hash = data.pop("request_hash")
    return _row(data), request_hash  # type: ignore[arg-type]


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
    """Store what changed; compare-and-set on the row version."""
    status = await conn.execute(
        """
        UPDATE intents
           SET received = $2, funding_status = $3, status = $4, event_sequence = $5,
               tx_hash = $6, relayer = $7, needs_relay = $8,
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
    )
    if status != "UPDATE 1":
        raise ConcurrentUpdate(f"intent {intent.id} changed while it was being updated")


async def due_for_expiry(conn: Connection, now: datetime, *, limit: int) -> list[int]:
    """Ids of PENDING intents past ``expires_at`` (partial index; no table scan)."""
    rows = await conn.fetch(
        "SELECT id FROM intents WHERE status = 'PENDING' AND expires_at <= $1"
        " ORDER BY expires_at LIMIT $2",
        now,
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
