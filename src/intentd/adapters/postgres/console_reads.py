"""What the console reads from PostgreSQL about one payment, besides the API's record:
its deposits, our actions and their transactions, its webhook deliveries with their
last attempts, and the state of the chains it moves on (poller progress, executor lease).

Reads take the intent ids (or the client and intent for deliveries) and return plain
rows, in order: deposits by block, actions by id with their transactions oldest first,
deliveries by event sequence. The console's overview reads are
``adapters.postgres.console_overview``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from intentd.adapters.postgres import Connection

__all__ = [
    "ActionRow",
    "ChainState",
    "DeliveryRow",
    "DepositRow",
    "TxRow",
    "actions_of",
    "chain_states",
    "deliveries_of",
    "deposits_of",
]

_EXECUTOR_LOCK = 0x1A7E_0E01  # adapters.postgres.executor_lease: (class, hashtext(chain))


@dataclass(frozen=True, slots=True)
class DepositRow:
    id: int
    chain: str
    tx_hash: str
    log_index: int
    block_number: int
    block_time: datetime
    token: str
    from_address: str
    amount: int
    disposition: str
    reason: str | None
    orphaned_at: datetime | None


@dataclass(frozen=True, slots=True)
class TxRow:
    action_id: int
    tx_hash: str
    chain: str
    purpose: str
    status: str
    nonce: int
    block_number: int | None
    gas_used: int | None
    effective_gas_price: int | None
    l1_fee: int | None
    created_at: datetime
    sent_at: datetime | None

    @property
    def fee(self) -> int | None:
        """What the transaction cost its signer in wei (gas and any L1 data fee)."""
        if self.gas_used is None or self.effective_gas_price is None:
            return None
        return self.gas_used * self.effective_gas_price + (self.l1_fee or 0)


@dataclass(frozen=True, slots=True)
class ActionRow:
    id: int
    kind: str
    chain: str
    token: str
    amount: int
    to_address: str
    reason: str | None
    status: str
    attempts: int
    last_error: str | None
    tx_hash: str | None
    amount_sent: int | None
    gas_cost: int | None
    created_at: datetime
    updated_at: datetime
    txs: tuple[TxRow, ...] = ()


@dataclass(frozen=True, slots=True)
class AttemptRow:
    id: int
    attempted_at: datetime
    status_code: int | None
    latency_ms: int
    error: str | None
    response_head: str
    outcome: str


@dataclass(frozen=True, slots=True)
class DeliveryRow:
    id: int
    event_id: str
    event_type: str
    sequence: int
    endpoint_id: UUID
    url: str
    status: str
    attempts: int
    next_attempt_at: datetime | None
    tries: tuple[AttemptRow, ...] = ()


@dataclass(frozen=True, slots=True)
class ChainState:
    chain: str
    cursor_block: int | None
    cursor_at: datetime | None
    executor_running: bool


async def deposits_of(conn: Connection, intent_ids: Sequence[int]) -> dict[int, list[DepositRow]]:
    rows = await conn.fetch(
        "SELECT intent_id, id, chain, tx_hash, log_index, block_number, block_time, token,"
        " from_address, amount, disposition, reason, orphaned_at FROM deposits"
        " WHERE intent_id = ANY($1::bigint[]) ORDER BY block_number, id",
        list(intent_ids),
    )
    found: dict[int, list[DepositRow]] = {i: [] for i in intent_ids}
    for r in rows:
        values = dict(r)
        intent_id = values.pop("intent_id")
        values["amount"] = int(values["amount"])
        found[intent_id].append(DepositRow(**values))
    return found


async def actions_of(conn: Connection, intent_ids: Sequence[int]) -> dict[int, list[ActionRow]]:
    """Each intent's actions (in order), each with its transactions (oldest first)."""
    rows = await conn.fetch(
        "SELECT intent_id, id, kind, chain, token, amount, to_address, reason, status,"
        " attempts, last_error, tx_hash, amount_sent, gas_cost, created_at, updated_at"
        " FROM actions WHERE intent_id = ANY($1::bigint[]) ORDER BY id",
        list(intent_ids),
    )
    txs = await conn.fetch(
        "SELECT action_id, tx_hash, chain, purpose, status, nonce, block_number, gas_used,"
        " effective_gas_price, l1_fee, created_at, sent_at FROM chain_transactions"
        " WHERE action_id = ANY($1::bigint[]) ORDER BY id",
        [r["id"] for r in rows],
    )
    by_action: dict[int, list[TxRow]] = {}
    for t in txs:
        values = dict(t)
        for name in ("effective_gas_price", "l1_fee"):
            values[name] = int(values[name]) if values[name] is not None else None
        by_action.setdefault(t["action_id"], []).append(TxRow(**values))
    found: dict[int, list[ActionRow]] = {i: [] for i in intent_ids}
    for r in rows:
        values = dict(r)
        intent_id = values.pop("intent_id")
        for name in ("amount", "amount_sent", "gas_cost"):
            values[name] = int(values[name]) if values[name] is not None else None
        found[intent_id].append(ActionRow(**values, txs=tuple(by_action.get(r["id"], ()))))
    return found


async def deliveries_of(
    conn: Connection, client_id: UUID, intent_id: int, *, attempts_each: int = 20
) -> list[DeliveryRow]:
    """The webhook deliveries of one intent's events (every endpoint of the client), with
    their last ``attempts_each`` attempts, by event order."""
    rows = await conn.fetch(
        """
        SELECT d.id, d.event_id, ev.type AS event_type, d.sequence, d.endpoint_id, e.url,
               d.status, d.attempts, d.next_attempt_at
          FROM webhook_deliveries d
          JOIN webhook_events ev ON ev.id = d.event_id
          JOIN webhook_endpoints e ON e.id = d.endpoint_id
         WHERE d.intent_id = $1 AND e.client_id = $2
         ORDER BY d.sequence, d.id
        """,
        intent_id,
        client_id,
    )
    tries = await conn.fetch(
        """
        SELECT delivery_id, id, attempted_at, status_code, latency_ms, error, response_head,
               outcome
          FROM (SELECT *, row_number() OVER (PARTITION BY delivery_id ORDER BY id DESC) AS n
                  FROM webhook_attempts WHERE delivery_id = ANY($1::bigint[])) a
         WHERE n <= $2 ORDER BY id
        """,
        [r["id"] for r in rows],
        attempts_each,
    )
    by_delivery: dict[int, list[AttemptRow]] = {}
    for t in tries:
        values = dict(t)
        by_delivery.setdefault(values.pop("delivery_id"), []).append(AttemptRow(**values))
    return [DeliveryRow(**dict(r), tries=tuple(by_delivery.get(r["id"], ()))) for r in rows]


async def chain_states(conn: Connection, chains: Sequence[str]) -> dict[str, ChainState]:
    """Each chain's poller progress and whether an executor holds its lease now."""
    rows = await conn.fetch(
        """
        SELECT c.name, k.block_number, k.updated_at,
               EXISTS (SELECT 1 FROM pg_locks l
                        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                          AND l.database = (SELECT oid FROM pg_database
                                             WHERE datname = current_database())
                          AND l.classid = $2::bigint::oid
                          AND l.objid = (hashtext(c.name)::bigint & 4294967295)::oid)
                   AS executor_running
          FROM unnest($1::text[]) AS c(name)
          LEFT JOIN chain_cursors k ON k.chain = c.name
        """,
        list(chains),
        _EXECUTOR_LOCK,
    )
    return {
        r["name"]: ChainState(r["name"], r["block_number"], r["updated_at"], r["executor_running"])
        for r in rows
    }
