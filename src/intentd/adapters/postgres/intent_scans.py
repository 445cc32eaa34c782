"""Trigger-processing bookkeeping in PostgreSQL: scan progress per intent, and the
deposits recorded for an intent (asyncpg)."""

from __future__ import annotations

from intentd.adapters.postgres import Connection
from intentd.adapters.postgres.deposit_rows import RECORDED, recorded
from intentd.domain.deposits import RecordedDeposit
from intentd.scanning.ports import ScanProgress

__all__ = ["ScanProgress", "advance", "deposits_of", "load", "start"]


async def load(conn: Connection, intent_id: int) -> ScanProgress | None:
    record = await conn.fetchrow(
        "SELECT first_block, scanned_to, scanned_hash FROM intent_scans WHERE intent_id = $1",
        intent_id,
    )
    if record is None:
        return None
    return ScanProgress(record["first_block"], record["scanned_to"], record["scanned_hash"])


async def start(conn: Connection, intent_id: int, chain: str, first_block: int) -> ScanProgress:
    """Record where the intent's window starts (the first caller wins a race)."""
    await conn.execute(
        """
        INSERT INTO intent_scans (intent_id, chain, first_block, scanned_to)
        VALUES ($1, $2, $3::bigint, $3::bigint - 1)
        ON CONFLICT (intent_id) DO NOTHING
        """,
        intent_id,
        chain,
        first_block,
    )
    progress = await load(conn, intent_id)
    assert progress is not None
    return progress


async def advance(
    conn: Connection, intent_id: int, scanned_to: int, scanned_hash: str | None = None
) -> None:
    """Record that every block up to ``scanned_to`` (whose hash is ``scanned_hash``) was
    scanned (never moves back)."""
    await conn.execute(
        """
        UPDATE intent_scans
           SET scanned_hash = CASE WHEN $2 >= scanned_to THEN $3 ELSE scanned_hash END,
               scanned_to = GREATEST(scanned_to, $2), updated_at = now()
         WHERE intent_id = $1
        """,
        intent_id,
        scanned_to,
        scanned_hash,
    )


async def deposits_of(conn: Connection, intent_id: int) -> list[RecordedDeposit]:
    """Every transfer recorded for the intent, in the order they were recorded."""
    records = await conn.fetch(
        f"SELECT {RECORDED} FROM deposits d WHERE d.intent_id = $1 ORDER BY d.id", intent_id
    )
    return [recorded(r) for r in records]
