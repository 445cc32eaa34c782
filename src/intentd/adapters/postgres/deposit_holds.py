"""Holding back what a reorg may have made unpayable (PostgreSQL, caller's transaction).

When a reorg removes a deposit the lifecycle cannot un-credit any more (the prefill
was signed, the intent moved on), the deposit is marked *orphaned* and every action
of its intent that spends from the intent address on the deposit's chain and has no
transaction yet is moved from ``ready`` to ``held`` (actions created later start
``held``, see ``lifecycle_store.create_action``). A refund or relayer refund then
cannot spend the funds of a transfer that is, for the moment, not on chain; nor can
a refund spend what the relayer is owed.

When the same transfer is seen again (same identity, any block), the deposit is no
longer orphaned, and once no deposit of the intent on that chain is, the held actions
go back to ``ready``. A hold that lasts longer than the configured bound raises one
operator alert (:func:`overdue`); the actions stay held until the chain gives the
transfer back or an operator decides.
"""

from __future__ import annotations

from datetime import datetime

from intentd.adapters.postgres import Connection
from intentd.lifecycle.ports import OverdueHold

__all__ = ["hold", "overdue", "release"]


async def hold(conn: Connection, deposit_id: int, intent_id: int, chain: str) -> int:
    """Mark the deposit orphaned and hold the intent's spending actions on ``chain``.

    Returns how many ready actions were held.
    """
    await conn.execute(
        "UPDATE deposits SET orphaned_at = COALESCE(orphaned_at, now()), updated_at = now()"
        " WHERE id = $1",
        deposit_id,
    )
    status = await conn.execute(
        "UPDATE actions SET status = 'held', updated_at = now()"
        " WHERE intent_id = $1 AND chain = $2 AND signer_kind = 'intent' AND status = 'ready'",
        intent_id,
        chain,
    )
    return int(status.split()[-1])


async def release(conn: Connection, intent_id: int, chain: str) -> int:
    """Put the intent's held actions on ``chain`` back to ready, unless a deposit of the
    intent there is still orphaned. Returns how many were released."""
    status = await conn.execute(
        """
        UPDATE actions SET status = 'ready', updated_at = now()
         WHERE intent_id = $1 AND chain = $2 AND status = 'held'
           AND NOT EXISTS (SELECT 1 FROM deposits
                            WHERE intent_id = $1 AND chain = $2 AND orphaned_at IS NOT NULL)
        """,
        intent_id,
        chain,
    )
    return int(status.split()[-1])


async def overdue(conn: Connection, *, before: datetime) -> list[OverdueHold]:
    """Orphaned deposits since before ``before`` not alerted yet; marks them alerted."""
    rows = await conn.fetch(
        """
        UPDATE deposits SET hold_alerted_at = now()
         WHERE orphaned_at IS NOT NULL AND orphaned_at < $1 AND hold_alerted_at IS NULL
        RETURNING id, intent_id, chain, tx_hash, orphaned_at
        """,
        before,
    )
    return [
        OverdueHold(
            deposit_id=row["id"],
            intent_id=row["intent_id"],
            chain=row["chain"],
            tx_hash=row["tx_hash"],
            orphaned_at=row["orphaned_at"],
        )
        for row in rows
    ]
