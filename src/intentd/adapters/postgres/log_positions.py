"""The lifecycle's :class:`~intentd.lifecycle.ports.LogPositions` on PostgreSQL.

``log_positions`` (migration 0014) holds one row per deposits partition the lifecycle
applied a chain message from; the poller's cursor, the intent addresses and the
recorded deposits are read from the poller's, the intents' and the deposits' tables;
replaying the outbox marks kept rows of a
topic unpublished, for :class:`~intentd.adapters.postgres.outbox.OutboxRelay` to send again.
"""

from __future__ import annotations

from intentd.adapters.postgres import Pool
from intentd.domain.deposits import DepositKey

__all__ = ["PostgresLogPositions"]


class PostgresLogPositions:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def record_applied_block(self, topic: str, partition: int, block_number: int) -> None:
        await self._pool.execute(
            """
            INSERT INTO log_positions (topic, partition, block_number) VALUES ($1, $2, $3)
            ON CONFLICT (topic, partition)
            DO UPDATE SET block_number = EXCLUDED.block_number, updated_at = now()
            """,
            topic,
            partition,
            block_number,
        )

    async def applied_block(self, topic: str, partition: int) -> int | None:
        found: int | None = await self._pool.fetchval(
            "SELECT block_number FROM log_positions WHERE topic = $1 AND partition = $2",
            topic,
            partition,
        )
        return found

    async def poller_cursor(self, chain: str) -> int | None:
        found: int | None = await self._pool.fetchval(
            "SELECT block_number FROM chain_cursors WHERE chain = $1", chain
        )
        return found

    async def intent_addresses(self) -> list[str]:
        rows = await self._pool.fetch("SELECT intent_address FROM intents")
        return [row[0] for row in rows]

    async def recorded_deposits(self, chain: str, first: int, last: int) -> list[DepositKey]:
        rows = await self._pool.fetch(
            """
            SELECT chain, tx_hash, token, transfer_index FROM deposits
             WHERE chain = $1 AND block_number BETWEEN $2 AND $3
               AND intent_id IS NOT NULL AND disposition <> 'retracted'
             ORDER BY id
            """,
            chain,
            first,
            last,
        )
        return [DepositKey(r["chain"], r["tx_hash"], r["token"], r["transfer_index"]) for r in rows]

    async def replay_outbox(self, topic: str) -> int:
        status: str = await self._pool.execute(
            "UPDATE outbox SET published_at = NULL WHERE topic = $1 AND published_at IS NOT NULL",
            topic,
        )
        return int(status.rsplit(maxsplit=1)[-1])
