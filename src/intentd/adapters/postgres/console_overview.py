"""The console overview's reads from PostgreSQL: the 30-day figures of ended intents,
the live counts, and the payments needing attention.

Every read names the client and the source chains of the screen's mode. The
overview's 30-day figures of ended intents come from ``console_day_totals``: a day
that ended more than :data:`SETTLED` ago is summed once (by its intents'
``terminal_at``, which is set once and never moves; no writer's transaction stays open
that long) and kept, so a page reads at most 30 small rows plus the unsettled
hours, whatever the number of intents (migration 0020: the indexes these reads use).
:func:`prune_day_totals` drops the days no overview reads any more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from intentd.adapters.postgres import Connection, intent_store
from intentd.contract.record import IntentRow

__all__ = ["SETTLED", "DayTotal", "attention", "day_totals", "live_counts", "prune_day_totals"]

SETTLED = timedelta(hours=1)


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
