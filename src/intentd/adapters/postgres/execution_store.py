"""The executor's rows in PostgreSQL: :class:`~intentd.execution.ports.ExecutionStore`.

Tables in ``0003_execution.sql``. A store transaction holds one repository per kind of
row, each mapping its rows to domain values: the actions, the gas tank's credit and
the relayer's float, and the deposits the verifier reads here; the chain
transactions, signer nonces and results in ``adapters.postgres.transaction_rows``. The rules
these rows keep:

- Every change to an action's transactions happens under the action's row lock
  (``FOR UPDATE``), and every status change is a compare-and-set along
  ``domain.actions.ALLOWED_MOVES``, so two executors that both believe they lead (a
  lock lost with its session) cannot record two transactions for one step of an action.
- A nonce is allocated (``signer_nonces`` row lock) in the transaction that records
  the signed transaction: a recorded nonce is never handed out again.
- Results go to the outbox (``lifecycle_store.enqueue``) in the transaction of the
  status change they report, under a stable id, once: ``sent`` with the first
  broadcast of the action's transfer, ``confirmed``/``failed`` with the final status.
- The relayer's float: its SQL is in ``adapters.postgres.relayer_float``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from intentd.adapters.postgres import Connection, Pool, relayer_float
from intentd.adapters.postgres.transaction_rows import (
    TX_COLUMNS,
    PostgresChainTransactions,
    PostgresNonces,
    PostgresResults,
    tx_of_row,
)
from intentd.domain.actions import NATIVE, Action, ActionKind, ActionStatus, SignerKind, moves_into
from intentd.execution.deposit_check import Credited
from intentd.execution.float_figures import Commitments, Exposure, FloatRow
from intentd.execution.tracking import Tx

__all__ = [
    "ACTIONS_CHANNEL",
    "Connection",
    "PostgresActionQueue",
    "PostgresCreditedDeposits",
    "PostgresExecutionStore",
    "PostgresExecutionTransaction",
    "PostgresFunds",
]

ACTIONS_CHANNEL = "intentd_actions"
"""NOTIFY channel that wakes the executors when actions become ready."""

_ACTION_COLUMNS = (
    "id, intent_id, kind, chain, token, amount, to_address, signer_kind, signer_index,"
    " gas_from_amount, attempts, status"
)
_READY, _SUBMITTED = ActionStatus.READY, ActionStatus.SUBMITTED
_RETRY_FROM = moves_into(_READY, (_READY, _SUBMITTED))
_FAIL_FROM = moves_into(ActionStatus.FAILED, (_READY, _SUBMITTED))
_CONFIRM_FROM = moves_into(ActionStatus.CONFIRMED, (_SUBMITTED,))


def _action(row: Any) -> Action:
    return Action(
        id=row["id"],
        intent_id=row["intent_id"],
        kind=ActionKind(row["kind"]),
        chain=row["chain"],
        token=row["token"].lower(),
        amount=int(row["amount"]),
        to_address=row["to_address"].lower(),
        signer_kind=SignerKind(row["signer_kind"]),
        signer_index=row["signer_index"],
        gas_from_amount=row["gas_from_amount"],
        attempts=row["attempts"],
    )


class PostgresExecutionStore:
    """The executor store of ``chain`` over a pool."""

    def __init__(self, pool: Pool, chain: str, topic_prefix: str) -> None:
        self._pool = pool
        self._chain = chain
        self._prefix = topic_prefix

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresExecutionTransaction]:
        async with self._pool.acquire() as conn, conn.transaction():
            yield PostgresExecutionTransaction(conn, self._chain, self._prefix)


class PostgresExecutionTransaction:
    """The executor's rows of one chain inside the caller's database transaction: its
    repositories (:class:`~intentd.execution.ports.StoreTransaction`)."""

    def __init__(self, conn: Connection, chain: str, topic_prefix: str) -> None:
        self.actions = PostgresActionQueue(conn, chain)
        self.transactions = PostgresChainTransactions(conn)
        self.nonces = PostgresNonces(conn, chain)
        self.funds = PostgresFunds(conn, chain)
        self.deposits = PostgresCreditedDeposits(conn)
        self.results = PostgresResults(conn, topic_prefix)


class PostgresActionQueue:
    """The chain's actions (:class:`~intentd.execution.repositories.ActionQueue`)."""

    def __init__(self, conn: Connection, chain: str) -> None:
        self._conn = conn
        self._chain = chain

    async def claim_ready(self) -> Action | None:
        row = await self._conn.fetchrow(
            f"SELECT {_ACTION_COLUMNS} FROM actions"
            " WHERE chain = $1 AND status = $2 AND not_before <= now()"
            " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
            self._chain,
            _READY.value,
        )
        return None if row is None else _action(row)

    async def lock(self, action_id: int, status: ActionStatus) -> Action | None:
        row = await self._conn.fetchrow(
            f"SELECT {_ACTION_COLUMNS} FROM actions WHERE id = $1 AND status = $2 FOR UPDATE",
            action_id,
            status.value,
        )
        return None if row is None else _action(row)

    async def lock_row(self, action_id: int) -> None:
        await self._conn.execute("SELECT 1 FROM actions WHERE id = $1 FOR UPDATE", action_id)

    async def submitted(self) -> list[tuple[Action, list[Tx]]]:
        actions = await self._conn.fetch(
            f"SELECT {_ACTION_COLUMNS} FROM actions WHERE chain = $1 AND status = $2 ORDER BY id",
            self._chain,
            _SUBMITTED.value,
        )
        if not actions:
            return []
        rows = await self._conn.fetch(
            f"SELECT {TX_COLUMNS} FROM chain_transactions WHERE action_id = ANY($1::bigint[])"
            " ORDER BY id",
            [a["id"] for a in actions],
        )
        by_action: dict[int, list[Tx]] = {a["id"]: [] for a in actions}
        for row in rows:
            by_action[row["action_id"]].append(tx_of_row(row))
        return [(_action(a), by_action[a["id"]]) for a in actions]

    async def age(self, action_id: int) -> float:
        return float(
            await self._conn.fetchval(
                "SELECT EXTRACT(EPOCH FROM now() - created_at)::float8 FROM actions WHERE id = $1",
                action_id,
            )
        )

    async def set_status(self, action_id: int, old: ActionStatus, new: ActionStatus) -> bool:
        status = await self._conn.execute(
            "UPDATE actions SET status = $3, updated_at = now() WHERE id = $1 AND status = $2",
            action_id,
            *moves_into(new, (old,)),
            new.value,
        )
        return bool(status == "UPDATE 1")

    async def postpone(self, action_id: int, *, delay: float, error: str) -> None:
        await self._conn.execute(
            "UPDATE actions SET not_before = now() + make_interval(secs => $2), last_error = $3,"
            " updated_at = now() WHERE id = $1 AND status = $4",
            action_id,
            delay,
            error,
            _READY.value,
        )

    async def retry(
        self, action_id: int, *, attempts: int, delay: float, error: str | None
    ) -> bool:
        status = await self._conn.execute(
            """
            UPDATE actions SET status = $5, attempts = $2, last_error = $3,
                   not_before = now() + make_interval(secs => $4), updated_at = now()
             WHERE id = $1 AND status = ANY($6::text[])
            """,
            action_id,
            attempts,
            error,
            delay,
            _READY.value,
            _RETRY_FROM,
        )
        return bool(status == "UPDATE 1")

    async def fail(self, action_id: int, *, attempts: int, error: str) -> bool:
        status = await self._conn.execute(
            """
            UPDATE actions SET status = $4, attempts = $2, last_error = $3, updated_at = now()
             WHERE id = $1 AND status = ANY($5::text[])
            """,
            action_id,
            attempts,
            error,
            ActionStatus.FAILED.value,
            _FAIL_FROM,
        )
        return bool(status == "UPDATE 1")

    async def confirm(
        self, action_id: int, *, tx_hash: str, amount_sent: int, gas_cost: int
    ) -> bool:
        status = await self._conn.execute(
            """
            UPDATE actions SET status = $5, tx_hash = $2, amount_sent = $3, gas_cost = $4,
                   updated_at = now()
             WHERE id = $1 AND status = ANY($6::text[])
            """,
            action_id,
            tx_hash,
            amount_sent,
            gas_cost,
            ActionStatus.CONFIRMED.value,
            _CONFIRM_FROM,
        )
        return bool(status == "UPDATE 1")


class PostgresFunds:
    """The gas tank's credit and the relayer's float
    (:class:`~intentd.execution.repositories.Funds`)."""

    def __init__(self, conn: Connection, chain: str) -> None:
        self._conn = conn
        self._chain = chain

    async def gas_credit(self, action: Action, address: str) -> int | None:
        """The gas tank's coin at the intent address ``address`` that signs ``action``:
        every top-up it confirmed there, less the gas (and OP-stack L1 data fee) burned by
        every final ERC-20 transfer the address signed. It is ours (never a user's deposit;
        native sweeps pay their gas out of their own amount). None while another ERC-20
        action of the address is in flight: its transfer may be spending that coin, so the
        caller must not count on it."""
        row = await self._conn.fetchrow(
            """
            SELECT EXISTS (
                       SELECT 1 FROM actions
                        WHERE chain = $1 AND signer_kind = 'intent' AND signer_index = $2
                          AND status = 'submitted' AND token <> $4 AND id <> $3) AS busy,
                   COALESCE((
                       SELECT SUM(value) FROM chain_transactions
                        WHERE chain = $1 AND purpose = 'gas_topup' AND to_address = $5
                          AND status = 'confirmed'), 0)
                   - COALESCE((
                       SELECT SUM(t.gas_used * t.effective_gas_price + COALESCE(t.l1_fee, 0))
                         FROM chain_transactions t
                         JOIN actions a ON a.id = t.action_id
                        WHERE t.chain = $1 AND t.purpose = 'transfer' AND t.signer = $5
                          AND t.status IN ('confirmed', 'reverted') AND a.token <> $4), 0) AS held
            """,
            action.chain,
            action.signer_index,
            action.id,
            NATIVE,
            address,
        )
        if row is None or row["busy"]:  # one row always: no FROM clause
            return None
        return max(int(row["held"]), 0)

    async def relayer_commitments(self, relayer: str) -> Commitments:
        return await relayer_float.relayer_commitments(self._conn, self._chain, relayer)

    async def exposure(self, relayer: str, *, overdue_after: float) -> Exposure:
        return await relayer_float.exposure(self._conn, self._chain, relayer, overdue_after)

    async def save_float(self, rows: Sequence[FloatRow], *, as_of: datetime) -> None:
        await relayer_float.save_float(self._conn, self._chain, rows, as_of)


class PostgresCreditedDeposits:
    """An intent's source and credited deposits
    (:class:`~intentd.execution.repositories.CreditedDeposits`)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def intent_source(self, intent_id: int) -> tuple[str, str] | None:
        row = await self._conn.fetchrow(
            "SELECT source_chain, token_in FROM intents WHERE id = $1", intent_id
        )
        return None if row is None else (row["source_chain"], row["token_in"])

    async def credited(self, intent_id: int, chain: str) -> list[Credited]:
        rows = await self._conn.fetch(
            "SELECT tx_hash, token, transfer_index, to_address, amount, block_number, block_hash,"
            " from_address FROM deposits"
            " WHERE intent_id = $1 AND chain = $2 AND disposition = 'credited'"
            " ORDER BY id",
            intent_id,
            chain,
        )
        return [
            Credited(
                tx_hash=r["tx_hash"].lower(),
                token=r["token"].lower(),
                transfer_index=r["transfer_index"],
                to_address=r["to_address"].lower(),
                amount=int(r["amount"]),
                block_number=r["block_number"],
                block_hash=r["block_hash"].lower(),
                from_address=r["from_address"].lower(),
            )
            for r in rows
        ]
