"""What the console's pages read from PostgreSQL besides the API's own lists: the
overview's figures, the payments needing attention, and everything about one payment
(its deposits, our actions and transactions, webhook deliveries, the chains' state).

Every read names the client and the source chains of the screen's mode. The
overview's 30-day figures of ended intents come from ``console_day_totals``: a day
that ended more than :data:`SETTLED` ago is summed once (by its intents'
``terminal_at``, which is set once and never moves; no writer's transaction stays open
that long) and kept, so a page reads at most 30 small rows plus the unsettled
hours, whatever the number of intents (migration 0020: the indexes these reads use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from intentd.adapters import intent_store
from intentd.adapters.postgres import Connection
from intentd.contract.record import IntentRow

__all__ = [
    "ActionRow",
    "ChainState",
    "DayTotal",
    "DeliveryRow",
    "DepositRow",
    "TxRow",
    "actions_of",
    "attention",
    "chain_states",
    "day_totals",
    "deliveries_of",
    "deposits_of",
    "live_counts",
    "prune_day_totals",
]

SETTLED = timedelta(hours=1)
_EXECUTOR_LOCK = 0x1A7E_0E01  # adapters.executor_lease: (class, hashtext(chain))


@dataclass(frozen=True, slots=True)
class DayTotal:
    day: date
    source_chain: str
    symbol: str
    decimals: int
    status: str
    count: int
    amount: int
    """Base units: what the intents of this row were due (``total_due``)."""
    usd: Decimal


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


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


async def _sum(
    conn: Connection, client_id: UUID, chains: Sequence[str], start: datetime, end: datetime
) -> list[Any]:
    return list(
        await conn.fetch(
            """
            SELECT (terminal_at AT TIME ZONE 'UTC')::date AS day, source_chain,
                   asset_token_symbol AS symbol, asset_token_decimals AS decimals, status,
                   count(*) AS count, coalesce(sum(total_due), 0) AS amount,
                   coalesce(sum(total_in_usd), 0) AS usd
              FROM intents
             WHERE client_id = $1 AND terminal_at >= $2 AND terminal_at < $3
               AND terminal_at IS NOT NULL AND source_chain = ANY($4::text[])
             GROUP BY 1, 2, 3, 4, 5
            """,
            client_id,
            start,
            end,
            list(chains),
        )
    )


def _total(r: Any) -> DayTotal:
    return DayTotal(
        r["day"],
        r["source_chain"],
        r["symbol"],
        r["decimals"],
        r["status"],
        int(r["count"]),
        int(r["amount"]),
        Decimal(r["usd"]),
    )


async def day_totals(
    conn: Connection, client_id: UUID, chains: Sequence[str], *, since: date, now: datetime
) -> list[DayTotal]:
    """Ended intents by day (UTC) from ``since`` to now: settled days from (or into) the
    day cache, the rest summed now."""
    settled_end = (now - SETTLED).date()  # days before this one are settled
    done = {
        r["day"]
        for r in await conn.fetch(
            "SELECT day FROM console_days_done WHERE client_id = $1 AND day >= $2 AND day < $3",
            client_id,
            since,
            settled_end,
        )
    }
    day = since
    while day < settled_end:
        if day not in done:
            await _settle_day(conn, client_id, day)
        day += timedelta(days=1)
    cached = await conn.fetch(
        "SELECT day, source_chain, symbol, decimals, status, count, amount, usd"
        " FROM console_day_totals WHERE client_id = $1 AND day >= $2 AND day < $3"
        " AND source_chain = ANY($4::text[])",
        client_id,
        since,
        settled_end,
        list(chains),
    )
    live = await _sum(conn, client_id, chains, _day_start(max(since, settled_end)), now + SETTLED)
    return [_total(r) for r in (*cached, *live)]


async def _settle_day(conn: Connection, client_id: UUID, day: date) -> None:
    """Sum one settled day (every chain) into the cache, once (a racing writer's rows win)."""
    start = _day_start(day)
    async with conn.transaction():
        rows = await conn.fetch(
            """
            SELECT source_chain, asset_token_symbol AS symbol,
                   asset_token_decimals AS decimals, status, count(*) AS count,
                   coalesce(sum(total_due), 0) AS amount, coalesce(sum(total_in_usd), 0) AS usd
              FROM intents
             WHERE client_id = $1 AND terminal_at >= $2 AND terminal_at < $3
               AND terminal_at IS NOT NULL
             GROUP BY 1, 2, 3, 4
            """,
            client_id,
            start,
            start + timedelta(days=1),
        )
        inserted = await conn.fetchval(
            "INSERT INTO console_days_done (client_id, day) VALUES ($1, $2)"
            " ON CONFLICT DO NOTHING RETURNING day",
            client_id,
            day,
        )
        if inserted is None:
            return
        await conn.executemany(
            "INSERT INTO console_day_totals (client_id, day, source_chain, symbol, decimals,"
            " status, count, amount, usd) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            [
                (
                    client_id,
                    day,
                    r["source_chain"],
                    r["symbol"],
                    r["decimals"],
                    r["status"],
                    r["count"],
                    r["amount"],
                    r["usd"],
                )
                for r in rows
            ],
        )


async def prune_day_totals(conn: Connection, *, older_than_days: int = 60) -> int:
    """Remove day totals no overview reads any more (it reads 30 days); how many rows."""
    total = 0
    for table in ("console_day_totals", "console_days_done"):
        status: str = await conn.execute(
            f"DELETE FROM {table} WHERE day < current_date - $1::int", older_than_days
        )
        total += int(status.rsplit(maxsplit=1)[-1])
    return total


async def live_counts(conn: Connection, client_id: UUID, chains: Sequence[str]) -> dict[str, int]:
    """How many of the client's intents are in each live status now."""
    rows = await conn.fetch(
        "SELECT status, count(*) AS n FROM intents WHERE client_id = $1 AND terminal_at IS NULL"
        " AND source_chain = ANY($2::text[]) GROUP BY status",
        client_id,
        list(chains),
    )
    return {r["status"]: int(r["n"]) for r in rows}


async def attention(
    conn: Connection,
    client_id: UUID,
    chains: Sequence[str],
    *,
    now: datetime,
    stuck_after: timedelta,
    grace: timedelta,
    limit: int,
) -> list[IntentRow]:
    """Live intents that should have moved by now (funded, initiated or refunding for
    longer than ``stuck_after``; pending past their expiry and its grace), and those with
    a failed action, an orphaned deposit or a pending approval; oldest change first."""
    records = await conn.fetch(
        f"""
        SELECT {intent_store.COLUMNS} FROM intents
         WHERE id IN (
            (SELECT id FROM intents
              WHERE client_id = $1 AND terminal_at IS NULL AND source_chain = ANY($2::text[])
                AND status IN ('FUNDED', 'INITIATED', 'REFUNDING') AND updated_at < $3
              ORDER BY updated_at LIMIT $5)
            UNION
            (SELECT id FROM intents
              WHERE client_id = $1 AND terminal_at IS NULL AND source_chain = ANY($2::text[])
                AND status = 'PENDING' AND expires_at < $4
              ORDER BY expires_at LIMIT $5)
            UNION
            (SELECT a.intent_id FROM actions a JOIN intents i ON i.id = a.intent_id
              WHERE a.status IN ('failed', 'held') AND i.client_id = $1
                AND i.source_chain = ANY($2::text[]) AND i.terminal_at IS NULL LIMIT $5)
            UNION
            (SELECT r.intent_id FROM refund_approvals r JOIN intents i ON i.id = r.intent_id
              WHERE r.client_id = $1 AND r.status = 'pending'
                AND i.source_chain = ANY($2::text[]) LIMIT $5))
         ORDER BY updated_at LIMIT $5
        """,
        client_id,
        list(chains),
        now - stuck_after,
        now - grace,
        limit,
    )
    return [intent_store.row_of(r) for r in records]


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
