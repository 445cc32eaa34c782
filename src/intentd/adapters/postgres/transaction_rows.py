"""The executor's chain transactions, signer nonces and results in PostgreSQL.

Three repositories of
:class:`~intentd.adapters.postgres.execution_store.PostgresExecutionTransaction` (the others
hold the actions, the funds and the deposits); tables in ``0003_execution.sql``. Every
statement runs in the caller's database transaction. The rules kept here:

- A nonce is allocated (``signer_nonces`` row lock) in the transaction that records
  the signed transaction: a recorded nonce is never handed out again.
- Every transaction status change is a compare-and-set.
- Results go to the outbox (``lifecycle_store.enqueue``) in the transaction of the
  status change they report, under a stable id.
"""

from __future__ import annotations

from typing import Any

import orjson

from intentd.adapters.postgres import Connection
from intentd.adapters.postgres.lifecycle_store import enqueue
from intentd.execution.gas import Fees
from intentd.execution.repositories import NewTx
from intentd.execution.tracking import OPEN_STATUSES, Receipt, Tx, TxStatus
from intentd.execution.tx_plans import Purpose
from intentd.messages import ActionResultMessage, action_results_topic

__all__ = [
    "TX_COLUMNS",
    "PostgresChainTransactions",
    "PostgresNonces",
    "PostgresResults",
    "tx_of_row",
]

TX_COLUMNS = (
    "id, action_id, purpose, signer, nonce, tx_hash, raw_tx, to_address, value, gas_limit,"
    " max_fee_per_gas, max_priority_fee_per_gas, status, block_number,"
    " EXTRACT(EPOCH FROM now() - updated_at)::float8 AS age"
)


def tx_of_row(row: Any) -> Tx:
    return Tx(
        id=row["id"],
        action_id=row["action_id"],
        purpose=Purpose(row["purpose"]),
        signer=row["signer"],
        nonce=row["nonce"],
        tx_hash=row["tx_hash"],
        raw=bytes(row["raw_tx"]),
        to=row["to_address"],
        value=int(row["value"]),
        gas_limit=row["gas_limit"],
        fees=Fees(int(row["max_fee_per_gas"]), int(row["max_priority_fee_per_gas"])),
        status=TxStatus(row["status"]),
        block_number=row["block_number"],
        age=max(float(row["age"]), 0.0),
    )


class PostgresChainTransactions:
    """The actions' chain transactions over one connection
    (:class:`~intentd.execution.repositories.ChainTransactions`)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def history(self, action_id: int) -> list[Tx]:
        rows = await self._conn.fetch(
            f"SELECT {TX_COLUMNS} FROM chain_transactions WHERE action_id = $1 ORDER BY id",
            action_id,
        )
        return [tx_of_row(row) for row in rows]

    async def record(self, tx: NewTx) -> int:
        value = await self._conn.fetchval(
            """
            INSERT INTO chain_transactions (action_id, purpose, chain, signer, nonce, tx_hash,
                   raw_tx, to_address, value, gas_limit, max_fee_per_gas,
                   max_priority_fee_per_gas, status)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            RETURNING id
            """,
            tx.action_id,
            tx.purpose.value,
            tx.chain,
            tx.signer,
            tx.nonce,
            tx.tx_hash,
            tx.raw,
            tx.to,
            tx.value,
            tx.gas_limit,
            tx.fees.max_fee_per_gas,
            tx.fees.max_priority_fee_per_gas,
            TxStatus.SIGNED.value,
        )
        return int(value)

    async def set_status(
        self,
        tx_id: int,
        new: TxStatus,
        *,
        old: frozenset[TxStatus] = OPEN_STATUSES,
        receipt: Receipt | None = None,
    ) -> bool:
        """Compare-and-set a transaction's status (and its block, when a receipt is given)."""
        status = await self._conn.execute(
            """
            UPDATE chain_transactions
               SET status = $2, block_number = $4, block_hash = $5, gas_used = $6,
                   effective_gas_price = $7, l1_fee = $8, updated_at = now()
             WHERE id = $1 AND status = ANY($3::text[])
            """,
            tx_id,
            new.value,
            [s.value for s in old],
            receipt.block_number if receipt else None,
            receipt.block_hash if receipt else None,
            receipt.gas_used if receipt else None,
            receipt.effective_gas_price if receipt else None,
            (receipt.l1_fee or None) if receipt else None,
        )
        return bool(status == "UPDATE 1")

    async def mark_sent(self, tx_id: int) -> bool:
        status = await self._conn.execute(
            "UPDATE chain_transactions SET status = $2, sent_at = now(), updated_at = now()"
            " WHERE id = $1 AND status = $3",
            tx_id,
            TxStatus.SENT.value,
            TxStatus.SIGNED.value,
        )
        return bool(status == "UPDATE 1")

    async def first_transfer_sent(self, action_id: int) -> bool:
        found = await self._conn.fetchval(
            "SELECT 1 FROM chain_transactions WHERE action_id = $1 AND purpose = $2"
            " AND sent_at IS NOT NULL LIMIT 1",
            action_id,
            Purpose.TRANSFER.value,
        )
        return found is not None

    async def touch(self, tx_id: int) -> None:
        await self._conn.execute(
            "UPDATE chain_transactions SET updated_at = now() WHERE id = $1", tx_id
        )


class PostgresNonces:
    """The signers' next nonces on ``chain`` (:class:`~intentd.execution.repositories.Nonces`)."""

    def __init__(self, conn: Connection, chain: str) -> None:
        self._conn = conn
        self._chain = chain

    async def reconcile(self, signer: str, pending: int) -> int:
        """Run once per signer per process."""
        recorded = await self._conn.fetchval(
            "SELECT MAX(nonce) + 1 FROM chain_transactions WHERE chain = $1 AND signer = $2",
            self._chain,
            signer,
        )
        floor = max(pending, recorded or 0)
        value = await self._conn.fetchval(
            """
            INSERT INTO signer_nonces (chain, signer, next_nonce) VALUES ($1, $2, $3)
            ON CONFLICT (chain, signer) DO UPDATE
               SET next_nonce = GREATEST(signer_nonces.next_nonce, EXCLUDED.next_nonce)
            RETURNING next_nonce
            """,
            self._chain,
            signer,
            floor,
        )
        return int(value)

    async def open_holes(self, signer: str, mined: int) -> int:
        """Gaps that would hold every later transaction of the signer back."""
        value = await self._conn.fetchval(
            """
            SELECT COUNT(*) FROM generate_series($3::bigint,
                   (SELECT next_nonce - 1 FROM signer_nonces WHERE chain = $1 AND signer = $2))
                   AS n
             WHERE NOT EXISTS (SELECT 1 FROM chain_transactions t
                                WHERE t.chain = $1 AND t.signer = $2 AND t.nonce = n
                                  AND t.status = ANY($4::text[]))
            """,
            self._chain,
            signer,
            mined,
            [s.value for s in OPEN_STATUSES],
        )
        return int(value or 0)

    async def allocate(self, signer: str) -> int:
        value = await self._conn.fetchval(
            "UPDATE signer_nonces SET next_nonce = next_nonce + 1"
            " WHERE chain = $1 AND signer = $2 RETURNING next_nonce - 1",
            self._chain,
            signer,
        )
        if value is None:
            raise RuntimeError(f"nonce of {signer} on {self._chain} was never reconciled")
        return int(value)


class PostgresResults:
    """The action results' outbox (:class:`~intentd.execution.repositories.Results`)."""

    def __init__(self, conn: Connection, topic_prefix: str) -> None:
        self._conn = conn
        self._prefix = topic_prefix

    async def add(self, result: ActionResultMessage) -> None:
        """Keyed by intent id."""
        data = result.model_dump()
        for field in ("amount_sent", "gas_cost"):  # may exceed 64 bits: strings, like amounts
            if data[field] is not None:
                data[field] = str(data[field])
        await enqueue(
            self._conn,
            topic=action_results_topic(self._prefix),
            key=str(result.intent_id),
            payload=orjson.dumps(data),
        )
