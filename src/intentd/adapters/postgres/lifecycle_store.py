"""Deposits, owed actions and outbox rows in PostgreSQL (asyncpg).

All functions run on the caller's connection, inside the caller's transaction, so
a deposit, the intent change it causes, the actions it owes and the events it
emits commit together or not at all.
"""

from __future__ import annotations

from intentd.adapters.postgres import Connection
from intentd.adapters.postgres.deposit_rows import RECORDED, deposit_values, rate_json, recorded
from intentd.domain.deposits import Deposit, Disposition, RecordedDeposit, Retraction
from intentd.domain.intent import PendingAction, RefundReason, SignerKind
from intentd.domain.valuation import Rate

OUTBOX_CHANNEL = "intentd_outbox"
"""NOTIFY channel that wakes the outbox relay when a row is committed."""


async def find_deposit(
    conn: Connection, deposit: Deposit, *, lock: bool = False
) -> RecordedDeposit | None:
    """The recorded deposit that is the same transfer as ``deposit``, on any fork.

    The same transfer is the row with the same identity ``(chain, tx_hash, token,
    transfer_index)``; failing that, the row recorded from the same log of the same
    block; failing that, a row recorded before identities existed (``transfer_index``
    NULL) with the same transaction, token, recipient and amount: identical transfers
    of one transaction are interchangeable, so adopting any one of them is sound. A
    deposit without ``transfer_index`` (from a poller before identities) matches by
    content the same way.
    """
    suffix = " FOR UPDATE" if lock else ""
    record = await conn.fetchrow(
        f"""SELECT {RECORDED} FROM deposits d
         WHERE chain = $1 AND tx_hash = $2 AND token = $3
           AND (transfer_index = $4
                OR (log_index = $5 AND block_hash = $6)
                OR ((transfer_index IS NULL OR $4::int IS NULL)
                    AND to_address = $7 AND amount = $8))
         ORDER BY CASE WHEN transfer_index = $4 THEN 0
                       WHEN log_index = $5 AND block_hash = $6 THEN 1 ELSE 2 END, id
         LIMIT 1{suffix}""",
        deposit.chain,
        deposit.tx_hash,
        deposit.token,
        deposit.transfer_index,
        deposit.log_index,
        deposit.block_hash,
        deposit.to_address,
        deposit.amount,
    )
    return None if record is None else recorded(record)


async def find_published(conn: Connection, retraction: Retraction) -> RecordedDeposit | None:
    """The deposit recorded from the log and block ``retraction`` names (locked).

    A retraction names the block it retracts from: a row the same transfer moved to
    another block since then is not it.
    """
    record = await conn.fetchrow(
        f"""SELECT {RECORDED} FROM deposits d
         WHERE chain = $1 AND tx_hash = $2 AND block_hash = $3 AND log_index = $4
         ORDER BY id LIMIT 1 FOR UPDATE""",
        retraction.chain,
        retraction.tx_hash,
        retraction.block_hash,
        retraction.log_index,
    )
    return None if record is None else recorded(record)


async def reconciled_in_block(
    conn: Connection, intent_id: int, deposit: Deposit
) -> list[RecordedDeposit]:
    """The reconciled deposits (``deposit``'s token, no sender) of the intent recorded in
    ``deposit``'s block for its recipient."""
    records = await conn.fetch(
        f"""SELECT {RECORDED} FROM deposits d
         WHERE intent_id = $1 AND chain = $2 AND block_hash = $3 AND to_address = $4
           AND token = $5 AND from_address = $6
         ORDER BY id""",
        intent_id,
        deposit.chain,
        deposit.block_hash,
        deposit.to_address,
        deposit.token,
        deposit.from_address,
    )
    return [recorded(r) for r in records]


async def record_deposit(
    conn: Connection,
    deposit: Deposit,
    *,
    intent_id: int | None,
    disposition: Disposition,
    reason: RefundReason | None,
    revive: int | None = None,
    rate: Rate | None = None,
) -> int:
    """Insert the deposit, or (``revive``: its row id) revive a retracted one a reorg
    brought back, with the block it is in now; ``rate``: the prices its credit was
    valued at."""
    if revive is not None:
        await conn.execute(
            """
            UPDATE deposits
               SET block_number = $2, block_hash = $3, block_time = $4, log_index = $5,
                   transfer_index = $6, amount = $7, intent_id = $8, disposition = $9,
                   reason = $10, orphaned_at = NULL, hold_alerted_at = NULL,
                   valuation = $11::jsonb, updated_at = now()
             WHERE id = $1 AND disposition = 'retracted'
            """,
            revive,
            deposit.block_number,
            deposit.block_hash,
            deposit.block_time,
            deposit.log_index,
            deposit.transfer_index,
            deposit.amount,
            intent_id,
            disposition.value,
            reason.value if reason else None,
            rate_json(rate),
        )
        return revive
    deposit_id = await conn.fetchval(
        """
        INSERT INTO deposits (chain, tx_hash, log_index, block_number, block_hash, block_time,
                              token, from_address, to_address, amount, transfer_index,
                              intent_id, disposition, reason, valuation)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::jsonb)
        ON CONFLICT DO NOTHING
        RETURNING id
        """,
        *deposit_values(deposit),
        intent_id,
        disposition.value,
        reason.value if reason else None,
        rate_json(rate),
    )
    if deposit_id is None:
        raise RuntimeError(f"deposit {deposit.key} exists")
    return int(deposit_id)


async def record_valuation(conn: Connection, intent_id: int, rate: Rate) -> int:
    """Record ``rate`` with the intent's credited deposits that have none; how many."""
    status = await conn.execute(
        "UPDATE deposits SET valuation = $2::jsonb, updated_at = now()"
        " WHERE intent_id = $1 AND disposition = 'credited' AND valuation IS NULL",
        intent_id,
        rate_json(rate),
    )
    return int(status.split()[-1])


async def relocate(conn: Connection, stored: RecordedDeposit, deposit: Deposit) -> None:
    """Record where a deposit is now (a reorg moved it), and its identity if it lacked one."""
    await conn.execute(
        """
        UPDATE deposits
           SET block_number = $2, block_hash = $3, block_time = $4, log_index = $5,
               transfer_index = COALESCE(transfer_index, $6), orphaned_at = NULL,
               hold_alerted_at = NULL, updated_at = now()
         WHERE id = $1
        """,
        stored.id,
        deposit.block_number,
        deposit.block_hash,
        deposit.block_time,
        deposit.log_index,
        deposit.transfer_index,
    )


async def is_own_transaction(conn: Connection, chain: str, tx_hash: str) -> bool:
    """Whether one of our signers sent ``tx_hash`` (recorded before it was broadcast)."""
    found = await conn.fetchval(
        "SELECT 1 FROM chain_transactions WHERE chain = $1 AND tx_hash = $2", chain, tx_hash
    )
    return found is not None


async def mark_retracted(conn: Connection, deposit_id: int) -> None:
    await conn.execute(
        "UPDATE deposits SET disposition = 'retracted', orphaned_at = NULL,"
        " hold_alerted_at = NULL, updated_at = now() WHERE id = $1",
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
    """Record an action as ``ready`` for the executor of its chain.

    ``held`` instead when it spends from the intent address on a chain where a deposit
    of the intent is orphaned (``adapters.postgres.deposit_holds``).
    """
    action_id = await conn.fetchval(
        """
        INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address, reason,
                             deposit_id, status, signer_kind, signer_index, gas_from_amount)
        VALUES ($1, $2,
                (SELECT COALESCE(MAX(sequence), 0) + 1 FROM actions
                  WHERE intent_id = $1 AND kind = $2),
                $3, $4, $5, $6, $7, $8,
                CASE WHEN $9 = 'intent' AND EXISTS (
                         SELECT 1 FROM deposits
                          WHERE intent_id = $1 AND chain = $3 AND orphaned_at IS NOT NULL)
                     THEN 'held' ELSE 'ready' END,
                $9, $10, $11)
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


async def cancel_prefill(conn: Connection, intent_id: int, *, wait: bool = True) -> bool:
    """Cancel an intent's prefill before any transaction; False if one was recorded.

    With ``wait=False`` a prefill whose row is locked (the executor is claiming, checking
    and signing it) is skipped, so False at once, instead of waiting for that
    transaction with the caller's locks held."""
    if wait:
        return await _cancel_ready(conn, "intent_id = $1 AND kind = 'prefill'", intent_id)
    return await _cancel_ready(
        conn,
        "id IN (SELECT id FROM actions WHERE intent_id = $1 AND kind = 'prefill'"
        " AND status = 'ready' FOR UPDATE SKIP LOCKED)",
        intent_id,
    )


async def _cancel_ready(conn: Connection, condition: str, value: int) -> bool:
    status = await conn.execute(
        "UPDATE actions SET status = 'cancelled', updated_at = now()"
        f" WHERE {condition} AND status = 'ready'",
        value,
    )
    return status == "UPDATE 1"


async def refund_reasons(conn: Connection, intent_id: int) -> frozenset[RefundReason]:
    """The reasons of the user refunds an intent decided (any action status)."""
    rows = await conn.fetch(
        "SELECT DISTINCT reason FROM actions"
        " WHERE intent_id = $1 AND kind = 'user_refund' AND reason IS NOT NULL",
        intent_id,
    )
    return frozenset(RefundReason(row["reason"]) for row in rows)


async def mark_result_applied(conn: Connection, result_id: str) -> bool:
    """Remember an applied action result; False if it was applied before."""
    status = await conn.execute(
        "INSERT INTO applied_results (id) VALUES ($1) ON CONFLICT DO NOTHING", result_id
    )
    return status == "INSERT 0 1"


async def action_reason(conn: Connection, action_id: int) -> tuple[str | None, str, int] | None:
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
