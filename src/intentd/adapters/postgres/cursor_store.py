"""The poller's state in PostgreSQL: cursor, recent blocks, published deposits.

Tables (``0001_initial.sql``): ``chain_cursors`` (one row per chain: the last
processed block), ``chain_blocks`` (the last ``window`` processed blocks, for the
reorg walk-back) and ``published_deposits`` (deposits published from those blocks,
to retract them if a reorg orphans them; an orphan's identity, token and
``transfer_index``, is read from its stored payload).

One poller per chain works at a time: :class:`ChainLock` (a session advisory lock,
an :class:`~intentd.adapters.postgres.lease.Lease`) makes a second one wait as a standby.
Behind it, each change of the cursor is one transaction and a compare-and-set on
the cursor row, so a second poller that got past the lock (say, after the first
one's database session died) fails with :class:`CursorConflict` instead of
interleaving with the first.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from intentd.adapters.postgres import Connection, Pool
from intentd.adapters.postgres.lease import Lease
from intentd.chain.blocks import BlockHeader
from intentd.indexer.reorg import Cursor, PublishedDeposit

__all__ = [
    "WINDOW",
    "ChainLock",
    "CursorConflict",
    "PostgresPollerStore",
]

WINDOW = 256
"""Processed blocks remembered per chain; a reorg deeper than this stops the poller."""


class CursorConflict(Exception):
    """The stored cursor is not where this poller left it: another poller moved it."""


class PostgresPollerStore:
    """:class:`~intentd.indexer.ports.PollerStore` of one chain on PostgreSQL."""

    def __init__(self, pool: Pool, chain: str, *, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError("window must be positive")
        self._pool = pool
        self._chain = chain
        self._window = window

    async def load_cursor(self) -> Cursor | None:
        row = await self._pool.fetchrow(
            "SELECT block_number, block_hash FROM chain_cursors WHERE chain = $1", self._chain
        )
        return None if row is None else Cursor(row["block_number"], row["block_hash"])

    async def remembered_blocks(self) -> dict[int, str]:
        rows = await self._pool.fetch(
            "SELECT block_number, block_hash FROM chain_blocks WHERE chain = $1", self._chain
        )
        return {row["block_number"]: row["block_hash"] for row in rows}

    async def orphans(self, after: int) -> list[PublishedDeposit]:
        rows = await self._pool.fetch(
            """
            SELECT block_number, block_hash, tx_hash, log_index, intent_address, payload
            FROM published_deposits WHERE chain = $1 AND block_number > $2
            ORDER BY block_number, tx_hash, log_index
            """,
            self._chain,
            after,
        )
        return [
            PublishedDeposit(
                block_number=row["block_number"],
                block_hash=row["block_hash"],
                tx_hash=row["tx_hash"],
                log_index=row["log_index"],
                intent_address=row["intent_address"],
                token=identity.get("token"),
                transfer_index=identity.get("transfer_index"),
                amount=int(identity["amount"]) if "amount" in identity else None,
            )
            for row in rows
            for identity in [orjson.loads(bytes(row["payload"]))]
        ]

    async def advance(
        self,
        previous: Cursor,
        headers: Sequence[BlockHeader],
        published: Sequence[tuple[PublishedDeposit, bytes]],
        *,
        drop_orphans: bool,
    ) -> None:
        if not headers:
            raise ValueError("advance needs at least one block")
        last = headers[-1]
        floor = last.number - self._window  # blocks at or below it are forgotten
        blocks = [h for h in headers if h.number > floor]
        deposits = [(p, payload) for p, payload in published if p.block_number > floor]
        async with self._pool.acquire() as conn, conn.transaction():
            await self._move(conn, previous, Cursor(last.number, last.hash))
            if drop_orphans:
                await conn.execute(
                    "DELETE FROM published_deposits WHERE chain = $1 AND block_number > $2",
                    self._chain,
                    previous.number,
                )
            await conn.execute(
                """
                INSERT INTO chain_blocks (chain, block_number, block_hash, parent_hash)
                SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[])
                """,
                self._chain,
                [h.number for h in blocks],
                [h.hash for h in blocks],
                [h.parent_hash for h in blocks],
            )
            if deposits:
                await conn.execute(
                    """
                    INSERT INTO published_deposits
                        (chain, block_number, block_hash, tx_hash, log_index, intent_address,
                         payload)
                    SELECT $1, * FROM unnest(
                        $2::bigint[], $3::text[], $4::text[], $5::int[], $6::text[], $7::bytea[])
                    """,
                    self._chain,
                    [p.block_number for p, _ in deposits],
                    [p.block_hash for p, _ in deposits],
                    [p.tx_hash for p, _ in deposits],
                    [p.log_index for p, _ in deposits],
                    [p.intent_address for p, _ in deposits],
                    [payload for _, payload in deposits],
                )
            await conn.execute(
                "DELETE FROM chain_blocks WHERE chain = $1 AND block_number <= $2",
                self._chain,
                floor,
            )
            await conn.execute(
                "DELETE FROM published_deposits WHERE chain = $1 AND block_number <= $2",
                self._chain,
                floor,
            )

    async def rewind(self, previous: Cursor, to: Cursor) -> None:
        if to.hash is None or to.number > previous.number:
            raise ValueError(f"cannot rewind from {previous} to {to}")
        async with self._pool.acquire() as conn, conn.transaction():
            await self._move(conn, previous, to)
            await conn.execute(
                "DELETE FROM chain_blocks WHERE chain = $1 AND block_number > $2",
                self._chain,
                to.number,
            )

    async def _move(self, conn: Connection, previous: Cursor, new: Cursor) -> None:
        if previous.hash is None:
            status = await conn.execute(
                """
                INSERT INTO chain_cursors (chain, block_number, block_hash) VALUES ($1, $2, $3)
                ON CONFLICT (chain) DO NOTHING
                """,
                self._chain,
                new.number,
                new.hash,
            )
            moved = status == "INSERT 0 1"
        else:
            status = await conn.execute(
                """
                UPDATE chain_cursors SET block_number = $2, block_hash = $3, updated_at = now()
                WHERE chain = $1 AND block_number = $4 AND block_hash = $5
                """,
                self._chain,
                new.number,
                new.hash,
                previous.number,
                previous.hash,
            )
            moved = status == "UPDATE 1"
        if not moved:
            raise CursorConflict(
                f"{self._chain}: the stored cursor is no longer block {previous.number} "
                f"({previous.hash}); is another poller of this chain running?"
            )


_LOCK_CLASS = 0x1A7E_0D01 & 0x7FFF_FFFF  # first key of the two-key advisory lock of a chain


class ChainLock(Lease):
    """Who polls a chain: the chain's poller :class:`~intentd.adapters.postgres.lease.Lease`."""

    def __init__(self, pool: Pool, chain: str) -> None:
        super().__init__(pool, _LOCK_CLASS, chain, holder="poller")
