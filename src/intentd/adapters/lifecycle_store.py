"""Deposits, owed actions and outbox rows in PostgreSQL (asyncpg).

All functions run on the caller's connection, inside the caller's transaction, so
a deposit, the intent change it causes, the actions it owes and the events it
emits commit together or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from intentd.adapters.intent_store import Connection
from intentd.domain.intent import Deposit, Disposition, PendingAction, RefundReason, SignerKind

OUTBOX_CHANNEL = "intentd_outbox"
"""NOTIFY channel that wakes the outbox relay when a row is committed."""


@dataclass(frozen=True, slots=True)
class StoredDeposit:
    id: int
    block_hash: str
    disposition: Disposition
    intent_id: int | None
    amount: int


async def find_deposit(
    conn: Connection, chain: str, tx_hash: str, log_index: int, *, lock: bool = False
) -> StoredDeposit | None:
    suffix = " FOR UPDATE" if lock else ""
    record = await conn.fetchrow(
        "SELECT id, block_hash, disposition, intent_id, amount FROM deposits"
        f" WHERE chain = $1 AND tx_hash = $2 AND log_index = $3{suffix}",
        chain,
        tx_hash,
        log_index,
    )
    if record is None:
        return None
    return StoredDeposit(
        id=record["id"],
        block_hash=record["block_hash"],
        disposition=Disposition(record["disposition"]),
        intent_id=record["intent_id"],
        amount=int(record["amount"]),
    )


async def record_deposit(
    conn: Connection,
    deposit: Deposit,
    *,
    intent_id: int | None,
    disposition: Disposition,
    reason: RefundReason | None,
) -> int:
    """Insert the deposit, or revive a retracted one that a reorg brought back."""
    deposit_id = await conn.fetchval(
        """
        INSERT INTO deposits (chain, tx_hash, log_index, block_number, block_hash, block_time,
                              token, from_address, to_address, amount, intent_id, disposition,
                              reason)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
        ON CONFLICT (chain, tx_hash, log_index) DO UPDATE
           SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash,
               block_time = EXCLUDED.block_time, amount = EXCLUDED.amount,
               intent_id = EXCLUDED.intent_id, disposition = EXCLUDED.disposition,
               reason = EXCLUDED.reason, updated_at = now()
         WHERE deposits.disposition = 'retracted'
        RETURNING id
        """,
        deposit.chain,
        deposit.tx_hash,
        deposit.log_index,
        deposit.block_number,
        deposit.block_hash,
        deposit.block_time,
        deposit.token,
        deposit.from_address,
        deposit.to_address,
        deposit.amount,
        intent_id,
        disposition.value,
        reason.value if reason else None,
    )
    if deposit_id is None:
        raise RuntimeError(f"deposit {deposit.chain}:{deposit.tx_hash}:{deposit.log_index} exists")
    return int(deposit_id)


async def is_own_transaction(conn: Connection, chain: str, tx_hash: str) -> bool:
    """Whether one of our signers sent ``tx_hash`` (recorded before it was broadcast)."""
    found = await conn.fetchval(
        "SELECT 1 FROM chain_transactions WHERE chain = $1 AND tx_hash = $2", chain, tx_hash
    )
    return found is not None


async def mark_retracted(conn: Connection, deposit_id: int) -> None:
    await conn.execute(
        "UPDATE deposits SET disposition = 'retracted', updated_at = now() WHERE id = $1",
        deposit_id,
    )


async def create_action(
    conn: Connection,
    *,
    intent_id: int,
    action: PendingAction,
    address_index: int,
    deposit_id: int | None = None,
) -> int:
    """Record an action as ``ready`` for the executor of its chain."""
    action_id = await conn.fetchval(
        """
        INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address, reason,
                             deposit_id, status, signer_kind, signer_index, gas_from_amount)
        VALUES ($1, $2,
                (SELECT COALESCE(MAX(sequence), 0) + 1 FROM actions
                  WHERE intent_id = $1 AND kind = $2),
                $3, $4, $5, $6, $7, $8, 'ready', $9, $10, $11)
        RETURNING id
        """,
        intent_id,
        action.kind.value,
        action.chain,
        action.token,
        action.amount,
        action.to_address,
        action.reason.value if action.reason else None,
        deposit_id,
        action.signer.value,
        address_index if action.signer is SignerKind.INTENT else None,
        action.gas_from_amount,
    )
    return int(action_id)  # the trigger of migration 0004 wakes the chain's executor


async def cancel_deposit_refund(conn: Connection, deposit_id: int) -> bool:
    """Cancel the refund of a deposit before any transaction; False if one was recorded."""
    return await _cancel_ready(conn, "deposit_id = $1 AND kind = 'user_refund'", deposit_id)


async def cancel_prefill(conn: Connection, intent_id: int) -> bool:
    """Cancel an intent's prefill before any transaction; False if one was recorded."""
    return await _cancel_ready(conn, "intent_id = $1 AND kind = 'prefill'", intent_id)


async def _cancel_ready(conn: Connection, condition: str, value: int) -> bool:
    status = await conn.execute(
        "UPDATE actions SET status = 'cancelled', updated_at = now()"
        f" WHERE {condition} AND status = 'ready'",
        value,
    )
    return status == "UPDATE 1"


async def mark_result_applied(conn: Connection, result_id: str) -> bool:
    """Remember an applied action result; False if it was applied before."""
    status = await conn.execute(
        "INSERT INTO applied_results (id) VALUES ($1) ON CONFLICT DO NOTHING", result_id
    )
    return status == "INSERT 0 1"


async def action_reason(conn: Connection, action_id: int) -> tuple[str, str, int] | None:
    """(reason, token, amount) of an action, for the refund it became."""
    record = await conn.fetchrow(
        "SELECT reason, token, amount FROM actions WHERE id = $1", action_id
    )
    if record is None:
        return None
    return record["reason"], record["token"], int(record["amount"])


async def action_age(conn: Connection, action_id: int) -> float:
    """Seconds since the action was written (database clock; 0 if it does not exist)."""
    age = await conn.fetchval(
        "SELECT EXTRACT(EPOCH FROM now() - created_at)::float8 FROM actions WHERE id = $1",
        action_id,
    )
    return max(float(age or 0.0), 0.0)


async def enqueue(conn: Connection, *, topic: str, key: str, payload: bytes) -> None:
    """Add a message to the outbox; it is relayed after the transaction commits."""
    await conn.execute(
        "INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)", topic, key, payload
    )
    await conn.execute(f"NOTIFY {OUTBOX_CHANNEL}")
