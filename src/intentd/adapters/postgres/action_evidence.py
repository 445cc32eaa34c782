"""What the executor recorded about an action, to check an action result against it.

Read-only (asyncpg). The executor writes an action's status, its confirmed figures
and every transaction it signs (``chain_transactions``) in the same database
transaction as the result it puts in the outbox, so a genuine result always finds
its evidence here.
"""

from __future__ import annotations

from intentd.adapters.postgres import Connection
from intentd.domain.actions import ActionKind, ActionStatus
from intentd.lifecycle.ports import ActionFacts

__all__ = ["facts"]


async def facts(conn: Connection, action_id: int, tx_hash: str | None) -> ActionFacts | None:
    """The facts of action ``action_id``; ``transfer_sent`` is about ``tx_hash``."""
    record = await conn.fetchrow(
        """
        SELECT a.intent_id, a.kind, a.chain, a.status, a.tx_hash, a.amount_sent, a.gas_cost,
               EXISTS (SELECT 1 FROM chain_transactions t
                        WHERE t.action_id = a.id AND t.tx_hash = $2
                          AND t.purpose = 'transfer' AND t.sent_at IS NOT NULL)
                 AS transfer_sent
          FROM actions a WHERE a.id = $1
        """,
        action_id,
        tx_hash,
    )
    if record is None:
        return None
    amount_sent, gas_cost = record["amount_sent"], record["gas_cost"]
    return ActionFacts(
        intent_id=record["intent_id"],
        kind=ActionKind(record["kind"]),
        chain=record["chain"],
        status=ActionStatus(record["status"]),
        tx_hash=record["tx_hash"],
        amount_sent=None if amount_sent is None else int(amount_sent),
        gas_cost=None if gas_cost is None else int(gas_cost),
        transfer_sent=record["transfer_sent"],
    )
