"""Each client's budget of webhook send calls in PostgreSQL (``webhook_send_budgets``).

:func:`take_send_call` takes one call from the client's bucket
(:func:`webhooks.send_budget.take`) in one transaction that locks the client's row,
on the database's clock: two API replicas taking at once take in turn, so the budget
holds over every process and replica.
"""

from __future__ import annotations

from uuid import UUID

from intentd.adapters.postgres import Connection
from intentd.webhooks.send_budget import Budget, take

__all__ = ["take_send_call"]


async def take_send_call(conn: Connection, client_id: UUID, per_minute: int) -> float:
    """0.0 if the client may make a send call now (it is counted), else the seconds
    until it may (nothing counted)."""
    async with conn.transaction():
        row = await conn.fetchrow(
            """
            INSERT INTO webhook_send_budgets AS b (client_id, tokens, updated_at)
            VALUES ($1, $2, clock_timestamp())
            ON CONFLICT (client_id) DO UPDATE SET client_id = b.client_id
            RETURNING b.tokens, b.updated_at, clock_timestamp() AS now
            """,
            client_id,
            float(per_minute),
        )
        assert row is not None
        before = Budget(row["tokens"], row["updated_at"])  # a new row: a full bucket
        after, wait = take(before, row["now"], per_minute)
        await conn.execute(
            "UPDATE webhook_send_budgets SET tokens = $2, updated_at = $3 WHERE client_id = $1",
            client_id,
            after.tokens,
            after.at,
        )
    return wait
