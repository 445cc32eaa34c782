"""Deposits recorded by trigger-processing, watched for reorgs until final (asyncpg).

Table ``trigger_deposits`` (``0008_trigger_deposits.sql``): one row per deposit that
trigger-processing recorded or saw, open (``settled_at`` null) until the verifier
(:mod:`intentd.lifecycle.trigger_verifier`) settles it: final, retracted, or gone.
Functions run on the caller's connection and inside the caller's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from intentd.adapters.intent_store import Connection

__all__ = ["Watched", "open_deposits", "remember", "rewind_scan", "settle"]


@dataclass(frozen=True, slots=True)
class Watched:
    deposit_id: int
    intent_id: int | None
    tx_hash: str
    log_index: int
    transfer_index: int | None
    """The deposit's identity within its transaction (None: recorded before 0005)."""
    block_number: int
    block_hash: str
    token: str
    to_address: str
    amount: int
    disposition: str


async def remember(
    conn: Connection, chain: str, tx_hash: str, token: str, transfer_index: int, *, reopen: bool
) -> None:
    """Watch the deposit ``(chain, tx_hash, token, transfer_index)`` (its identity);
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
        chain,
        tx_hash,
        token,
        transfer_index,
    )


async def open_deposits(conn: Connection, chain: str, *, limit: int) -> list[Watched]:
    """The deposits of ``chain`` still watched, oldest first."""
    rows = await conn.fetch(
        """
        SELECT d.id AS deposit_id, d.intent_id, d.tx_hash, d.log_index, d.transfer_index,
               d.block_number,
               d.block_hash, d.token, d.to_address, d.amount, d.disposition
          FROM trigger_deposits t JOIN deposits d ON d.id = t.deposit_id
         WHERE t.chain = $1 AND t.settled_at IS NULL
         ORDER BY t.deposit_id LIMIT $2
        """,
        chain,
        limit,
    )
    return [Watched(**{**dict(r), "amount": int(r["amount"])}) for r in rows]


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
