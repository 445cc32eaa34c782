"""The executor's rows in PostgreSQL: actions, chain transactions, signer nonces, results.

Tables in ``0003_execution.sql``. The rules these functions keep:

- Every change to an action's transactions happens under the action's row lock
  (``FOR UPDATE``), and every status change is a compare-and-set, so two executors
  that both believe they lead (a lock lost with its session) cannot record two
  transactions for one step of an action.
- A nonce is allocated (``signer_nonces`` row lock) in the transaction that records
  the signed transaction: a recorded nonce is never handed out again.
- Results go to the outbox (``lifecycle_store.enqueue``) in the transaction of the
  status change they report, under a stable id, once: ``sent`` with the first
  broadcast of the action's transfer, ``confirmed``/``failed`` with the final status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg
import orjson

from intentd.adapters.lifecycle_store import enqueue
from intentd.execution.gas import Fees
from intentd.execution.planning import NATIVE, Action, Purpose, SignerKind
from intentd.execution.tracking import OPEN_STATUSES, Receipt, Tx, TxStatus
from intentd.messages import ActionResultMessage, action_result_id, action_results_topic

Connection = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy

__all__ = [
    "ACTIONS_CHANNEL",
    "NewTx",
    "allocate_nonce",
    "claim_ready",
    "confirm_action",
    "enqueue_result",
    "fail_action",
    "first_transfer_sent",
    "history",
    "lock_action",
    "mark_sent",
    "open_nonce_holes",
    "postpone",
    "reconcile_nonce",
    "record_transaction",
    "result_message",
    "retry_action",
    "set_action_status",
    "set_tx_status",
    "submitted_actions",
    "touch",
]

ACTIONS_CHANNEL = "intentd_actions"
"""NOTIFY channel that wakes the executors when actions become ready."""

_ACTION_COLUMNS = (
    "id, intent_id, kind, chain, token, amount, to_address, signer_kind, signer_index,"
    " gas_from_amount, attempts, status"
)
_TX_COLUMNS = (
    "id, action_id, purpose, signer, nonce, tx_hash, raw_tx, to_address, value, gas_limit,"
    " max_fee_per_gas, max_priority_fee_per_gas, status, block_number,"
    " EXTRACT(EPOCH FROM now() - updated_at)::float8 AS age"
)


def _action(row: Any) -> Action:
    return Action(
        id=row["id"],
        intent_id=row["intent_id"],
        kind=row["kind"],
        chain=row["chain"],
        token=row["token"].lower(),
        amount=int(row["amount"]),
        to_address=row["to_address"].lower(),
        signer_kind=SignerKind(row["signer_kind"]),
        signer_index=row["signer_index"],
        gas_from_amount=row["gas_from_amount"],
        attempts=row["attempts"],
    )


def _tx(row: Any) -> Tx:
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


async def claim_ready(conn: Connection, chain: str) -> Action | None:
    """Lock the first ready action of ``chain`` that is due (the caller's transaction)."""
    row = await conn.fetchrow(
        f"SELECT {_ACTION_COLUMNS} FROM actions"
        " WHERE chain = $1 AND status = 'ready' AND not_before <= now()"
        " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
        chain,
    )
    return None if row is None else _action(row)


async def lock_action(conn: Connection, action_id: int, status: str) -> Action | None:
    """Lock the action if it is still in ``status`` (compare-and-set guard)."""
    row = await conn.fetchrow(
        f"SELECT {_ACTION_COLUMNS} FROM actions WHERE id = $1 AND status = $2 FOR UPDATE",
        action_id,
        status,
    )
    return None if row is None else _action(row)


async def submitted_actions(conn: Connection, chain: str) -> list[tuple[Action, list[Tx]]]:
    """The chain's actions in flight, each with its transactions, oldest first."""
    actions = await conn.fetch(
        f"SELECT {_ACTION_COLUMNS} FROM actions WHERE chain = $1 AND status = 'submitted'"
        " ORDER BY id",
        chain,
    )
    if not actions:
        return []
    rows = await conn.fetch(
        f"SELECT {_TX_COLUMNS} FROM chain_transactions WHERE action_id = ANY($1::bigint[])"
        " ORDER BY id",
        [a["id"] for a in actions],
    )
    by_action: dict[int, list[Tx]] = {a["id"]: [] for a in actions}
    for row in rows:
        by_action[row["action_id"]].append(_tx(row))
    return [(_action(a), by_action[a["id"]]) for a in actions]


async def history(conn: Connection, action_id: int) -> list[Tx]:
    """Every transaction of the action, oldest first."""
    rows = await conn.fetch(
        f"SELECT {_TX_COLUMNS} FROM chain_transactions WHERE action_id = $1 ORDER BY id",
        action_id,
    )
    return [_tx(row) for row in rows]


async def gas_credit(conn: Connection, action: Action, address: str) -> int | None:
    """The gas tank's coin at the intent address ``address`` that signs ``action``: every
    top-up it confirmed there, less the gas (and OP-stack L1 data fee) burned by every
    final ERC-20 transfer the address signed. It is ours (never a user's deposit; native
    sweeps pay their gas out of their own amount). None while another ERC-20 action of
    the address is in flight: its transfer may be spending that coin, so the caller must
    not count on it."""
    row = await conn.fetchrow(
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


async def reconcile_nonce(conn: Connection, chain: str, signer: str, pending: int) -> int:
    """Make the stored next nonce at least the chain's pending count and one past every
    nonce recorded for the signer; return it. Run once per signer per process."""
    recorded = await conn.fetchval(
        "SELECT MAX(nonce) + 1 FROM chain_transactions WHERE chain = $1 AND signer = $2",
        chain,
        signer,
    )
    floor = max(pending, recorded or 0)
    value = await conn.fetchval(
        """
        INSERT INTO signer_nonces (chain, signer, next_nonce) VALUES ($1, $2, $3)
        ON CONFLICT (chain, signer) DO UPDATE
           SET next_nonce = GREATEST(signer_nonces.next_nonce, EXCLUDED.next_nonce)
        RETURNING next_nonce
        """,
        chain,
        signer,
        floor,
    )
    return int(value)


async def open_nonce_holes(conn: Connection, chain: str, signer: str, mined: int) -> int:
    """Nonces from ``mined`` below the stored next nonce with no open transaction of ours:
    gaps that would hold every later transaction of the signer back."""
    value = await conn.fetchval(
        """
        SELECT COUNT(*) FROM generate_series($3::bigint,
               (SELECT next_nonce - 1 FROM signer_nonces WHERE chain = $1 AND signer = $2)) AS n
         WHERE NOT EXISTS (SELECT 1 FROM chain_transactions t
                            WHERE t.chain = $1 AND t.signer = $2 AND t.nonce = n
                              AND t.status = ANY($4::text[]))
        """,
        chain,
        signer,
        mined,
        [s.value for s in OPEN_STATUSES],
    )
    return int(value or 0)


async def allocate_nonce(conn: Connection, chain: str, signer: str) -> int:
    """The signer's next nonce, taken under its row lock (the caller's transaction)."""
    value = await conn.fetchval(
        "UPDATE signer_nonces SET next_nonce = next_nonce + 1"
        " WHERE chain = $1 AND signer = $2 RETURNING next_nonce - 1",
        chain,
        signer,
    )
    if value is None:
        raise RuntimeError(f"nonce of {signer} on {chain} was never reconciled")
    return int(value)


@dataclass(frozen=True, slots=True)
class NewTx:
    action_id: int
    purpose: Purpose
    chain: str
    signer: str
    nonce: int
    tx_hash: str
    raw: bytes
    to: str
    value: int
    gas_limit: int
    fees: Fees


async def record_transaction(conn: Connection, tx: NewTx) -> int:
    """Insert a signed transaction (status ``signed``); return its id."""
    value = await conn.fetchval(
        """
        INSERT INTO chain_transactions (action_id, purpose, chain, signer, nonce, tx_hash, raw_tx,
               to_address, value, gas_limit, max_fee_per_gas, max_priority_fee_per_gas, status)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'signed')
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
    )
    return int(value)


async def set_action_status(conn: Connection, action_id: int, old: str, new: str) -> bool:
    status = await conn.execute(
        "UPDATE actions SET status = $3, updated_at = now() WHERE id = $1 AND status = $2",
        action_id,
        old,
        new,
    )
    return bool(status == "UPDATE 1")


async def set_tx_status(
    conn: Connection,
    tx_id: int,
    new: TxStatus,
    *,
    old: frozenset[TxStatus] = OPEN_STATUSES,
    receipt: Receipt | None = None,
) -> bool:
    """Compare-and-set a transaction's status (and its block, when a receipt is given)."""
    status = await conn.execute(
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


async def touch(conn: Connection, tx_id: int) -> None:
    """Restart the stuck clock of a transaction (it was just re-broadcast)."""
    await conn.execute("UPDATE chain_transactions SET updated_at = now() WHERE id = $1", tx_id)


async def mark_sent(conn: Connection, tx_id: int) -> bool:
    """``signed`` → ``sent``; True if this call made the change."""
    status = await conn.execute(
        "UPDATE chain_transactions SET status = 'sent', sent_at = now(), updated_at = now()"
        " WHERE id = $1 AND status = 'signed'",
        tx_id,
    )
    return bool(status == "UPDATE 1")


async def first_transfer_sent(conn: Connection, action_id: int) -> bool:
    """Whether the action's ``sent`` result is already in the outbox."""
    found = await conn.fetchval(
        "SELECT 1 FROM chain_transactions WHERE action_id = $1 AND purpose = 'transfer'"
        " AND sent_at IS NOT NULL LIMIT 1",
        action_id,
    )
    return found is not None


async def confirm_action(
    conn: Connection, action_id: int, *, tx_hash: str, amount_sent: int, gas_cost: int
) -> bool:
    status = await conn.execute(
        """
        UPDATE actions SET status = 'confirmed', tx_hash = $2, amount_sent = $3, gas_cost = $4,
               updated_at = now()
         WHERE id = $1 AND status = 'submitted'
        """,
        action_id,
        tx_hash,
        amount_sent,
        gas_cost,
    )
    return bool(status == "UPDATE 1")


async def retry_action(
    conn: Connection, action_id: int, *, attempts: int, delay: float, error: str | None
) -> bool:
    """Back to ``ready`` after a failed attempt, due in ``delay`` seconds."""
    status = await conn.execute(
        """
        UPDATE actions SET status = 'ready', attempts = $2, last_error = $3,
               not_before = now() + make_interval(secs => $4), updated_at = now()
         WHERE id = $1 AND status IN ('ready', 'submitted')
        """,
        action_id,
        attempts,
        error,
        delay,
    )
    return bool(status == "UPDATE 1")


async def postpone(conn: Connection, action_id: int, *, delay: float, error: str) -> None:
    """Leave a ready action for later without counting an attempt (e.g. fees above the cap)."""
    await conn.execute(
        "UPDATE actions SET not_before = now() + make_interval(secs => $2), last_error = $3,"
        " updated_at = now() WHERE id = $1 AND status = 'ready'",
        action_id,
        delay,
        error,
    )


async def fail_action(conn: Connection, action_id: int, *, attempts: int, error: str) -> bool:
    status = await conn.execute(
        """
        UPDATE actions SET status = 'failed', attempts = $2, last_error = $3, updated_at = now()
         WHERE id = $1 AND status IN ('ready', 'submitted')
        """,
        action_id,
        attempts,
        error,
    )
    return bool(status == "UPDATE 1")


async def enqueue_result(conn: Connection, topic_prefix: str, result: ActionResultMessage) -> None:
    """Put an action result in the outbox (the caller's transaction), keyed by intent id."""
    data = result.model_dump()
    for field in ("amount_sent", "gas_cost"):  # may exceed 64 bits: strings, like amounts
        if data[field] is not None:
            data[field] = str(data[field])
    await enqueue(
        conn,
        topic=action_results_topic(topic_prefix),
        key=str(result.intent_id),
        payload=orjson.dumps(data),
    )


def result_message(action: Action, event: str, **fields: Any) -> ActionResultMessage:
    return ActionResultMessage(
        id=action_result_id(action.id, event),
        action_id=action.id,
        intent_id=action.intent_id,
        action_kind=action.kind,
        event=event,
        chain=action.chain,
        **fields,
    )
