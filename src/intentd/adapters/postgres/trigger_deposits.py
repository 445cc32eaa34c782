"""Deposits recorded by trigger-processing, watched for reorgs until final (asyncpg).

Table ``trigger_deposits`` (``0008_trigger_deposits.sql``): one row per deposit that
trigger-processing recorded or saw, open (``settled_at`` null) until the verifier
(:mod:`intentd.scanning.trigger_verifier`) settles it: final, retracted, or gone.
Functions run on the caller's connection and inside the caller's transaction.
"""

from __future__ import annotations

from intentd.adapters.postgres import Connection
from intentd.adapters.postgres.deposit_rows import RECORDED, recorded
from intentd.domain.deposits import DepositKey, RecordedDeposit

__all__ = ["open_deposits", "remember", "rewind_scan", "settle"]


async def remember(conn: Connection, key: DepositKey, *, reopen: bool) -> None:
    """Watch the deposit of identity ``key``;
    ``reopen``: watch it again even if it was settled (it was just recorded anew, say
    revived after a retraction)."""
    conflict = (
        "DO UPDATE SET settled_at = NULL, outcome = NULL, updated_at = now()"
        if reopen
        else "DO NOTHING"
    )
    await conn.execute(
        f"""
        INSERT INTO trigger_deposits (deposit_id, chain)
        SELECT id, chain FROM deposits
         WHERE chain = $1 AND tx_hash = $2 AND token = $3 AND transfer_index = $4
        ON CONFLICT (deposit_id) {conflict}
        """,
        key.chain,
        key.tx_hash,
        key.token,
        key.transfer_index,
    )


async def open_deposits(conn: Connection, chain: str, *, limit: int) -> list[RecordedDeposit]:
    """The deposits of ``chain`` still watched, oldest first."""
    rows = await conn.fetch(
        f"""
        SELECT {RECORDED}
          FROM trigger_deposits t JOIN deposits d ON d.id = t.deposit_id
         WHERE t.chain = $1 AND t.settled_at IS NULL
         ORDER BY t.deposit_id LIMIT $2
        """,
        chain,
        limit,
    )
    return [recorded(r) for r in rows]


async def settle(conn: Connection, deposit_id: int, outcome: str) -> None:
    """Stop watching the deposit; ``outcome`` says why."""
    await conn.execute(
        "UPDATE trigger_deposits SET settled_at = now(), outcome = $2, updated_at = now()"
        " WHERE deposit_id = $1",
        deposit_id,
        outcome,
    )


async def rewind_scan(conn: Connection, intent_id: int, block_number: int) -> None:
    """Make trigger-processing scan the intent's window again from ``block_number``
    (the new branch of a reorg may hold transfers the old one did not)."""
    await conn.execute(
        """
        UPDATE intent_scans
           SET scanned_to = GREATEST(LEAST(scanned_to, $2 - 1), first_block - 1),
               scanned_hash = NULL, updated_at = now()
         WHERE intent_id = $1 AND scanned_to >= $2
        """,
        intent_id,
        block_number,
    )
