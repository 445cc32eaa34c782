"""Benchmark: ``GET /api/v1/intents``'s query (``adapters.postgres.intent_list.page``) on
10^6 intents.

``python -m bench intent-list [--intents N] [--clients C] [--rounds R] [--plans]``
creates a database of its own (on the local infrastructure's PostgreSQL), migrates it
(so the indexes are migration 0012's), and loads N intents in one statement per
100,000: 60 % of them one busy client's, the rest spread over C - 1 others; one
intent every 2.6 s of ``created_at`` (about a month for 10^6), statuses and funding
statuses in realistic shares (COMPLETED 85 %, EXPIRED 8 %, PENDING 5 %, REFUNDED 1 %,
FUNDED 1 %; OVERFUNDED 1 %), two source chains (70/30), 50 recipients, a sender on
one intent in five (5,000 senders), a session on one in ten (three intents each) and
metadata ``{"order_id": unique, "tier": one of three}``. ``created_tx`` grows with the
id, as if each intent had its own transaction.

Then, for the busy client, as a test key sees it (both test chains), R times each:
the first page (limit 100, so 101 rows are read) with no filter and with each filter,
a page from a cursor in the middle, and oldest first near the newest end. p50 and
p99 in ms, as JSON; with ``--plans``, each case's plan (``EXPLAIN ANALYZE``) after it.
The database is dropped at the end.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.cli import options, print_report
from bench.scratch import scratch_pool
from bench.timing import figures
from intentd.adapters.postgres import Connection, intent_list
from intentd.adapters.postgres.intent_list import IntentFilter, ListPosition

BUSY = uuid.UUID(int=1)
START = datetime(2026, 10, 1, tzinfo=UTC)
CHAINS = ["ARBITRUM_TESTNET", "BASE_TESTNET"]
BATCH = 100_000

_LOAD = """
INSERT INTO intents (client_id, request_hash, initial_amount, source_chain,
    destination_chain, token_in, token_out, token_out_decimals, asset_token_symbol,
    asset_token_decimals, total_due, amount_out, address_index, intent_address,
    recipient, refund_address, sender, status, funding_status, session_id, metadata,
    expires_at, created_at, created_tx)
SELECT CASE WHEN n % 5 < 3 THEN $1::uuid
         ELSE ($2::uuid[])[1 + n % array_length($2::uuid[], 1)] END,
    'h', '10',
    CASE WHEN h / 7 % 10 < 7 THEN 'BASE_TESTNET' ELSE 'ARBITRUM_TESTNET' END,
    CASE WHEN h / 7 % 10 < 7 THEN 'ARBITRUM_TESTNET' ELSE 'BASE_TESTNET' END,
    '0x', '0x', 6, 'USDC', 6, 10, 10, n, '0x' || lpad(to_hex(n), 40, '0'),
    '0xa' || lpad(to_hex(h / 13 % 50), 39, '0'), '0x',
    CASE WHEN h / 10000 % 5 = 0 THEN '0xb' || lpad(to_hex(h / 50000 % 5000), 39, '0') END,
    CASE WHEN h % 100 < 85 THEN 'COMPLETED' WHEN h % 100 < 93 THEN 'EXPIRED'
         WHEN h % 100 < 98 THEN 'PENDING' WHEN h % 100 < 99 THEN 'REFUNDED'
         ELSE 'FUNDED' END,
    CASE WHEN h % 100 BETWEEN 85 AND 97 THEN 'NONE' WHEN h / 100 % 100 = 7 THEN 'OVERFUNDED'
         ELSE 'EXACT' END,
    CASE WHEN h / 1000 % 10 = 3 THEN 'sess-' || (n / 30) END,
    jsonb_build_object('order_id', 'ord-' || n,
                       'tier', (ARRAY['gold', 'silver', 'bronze'])[1 + h / 17 % 3]),
    $3::timestamptz + make_interval(secs => n * 2.6 + 3600),
    $3::timestamptz + make_interval(secs => n * 2.6),
    $4::bigint + n
FROM generate_series($5::bigint, $6::bigint) AS n,
    LATERAL (SELECT n * 2654435761 % 4294967296 AS h) AS hashed
"""


async def load(
    conn: Connection,
    intents: int,
    clients: int,
    *,
    statement: str = _LOAD,
    start: datetime = START,
) -> float:
    """``intents`` intents of ``clients`` clients (60 % of the busy one's) inserted by
    ``statement`` (in batches), created 2.6 s apart from ``start``; the seconds it took."""
    others = [uuid.uuid4() for _ in range(clients - 1)]
    # below every transaction id to come: every loaded intent is listed at once
    base = int(await conn.fetchval("SELECT pg_current_xact_id()::text::bigint")) - intents - 1
    began = time.perf_counter()
    for first in range(1, intents + 1, BATCH):
        last = min(first + BATCH - 1, intents)
        await conn.execute(statement, BUSY, others, start, base, first, last)
    await conn.execute("VACUUM ANALYZE intents")
    return time.perf_counter() - began


async def cases(conn: Connection, intents: int) -> dict[str, tuple[IntentFilter, dict[str, Any]]]:
    busy = IntentFilter(client_id=BUSY, source_chains=CHAINS)
    ordered = await conn.fetch(
        "SELECT created_tx, id FROM intents WHERE client_id = $1 ORDER BY created_tx, id", BUSY
    )
    middle = ordered[len(ordered) // 2]
    one = await conn.fetchrow(
        "SELECT sender, session_id, recipient FROM intents WHERE client_id = $1"
        " AND sender IS NOT NULL AND session_id IS NOT NULL ORDER BY id LIMIT 1",
        BUSY,
    )
    assert one is not None
    near_end = ordered[-50]
    day = START + timedelta(days=12)

    def only(**changes: Any) -> IntentFilter:
        return IntentFilter(client_id=BUSY, source_chains=CHAINS, **changes)

    newest: dict[str, Any] = {}
    return {
        "newest_first_page": (busy, newest),
        "newest_first_from_middle_cursor": (
            busy,
            {"after": ListPosition(middle["created_tx"], middle["id"])},
        ),
        "oldest_first_catch_up_near_end": (
            busy,
            {"after": ListPosition(near_end["created_tx"], near_end["id"]), "descending": False},
        ),
        "status_pending_5pct": (only(status="PENDING"), newest),
        "status_refunded_1pct": (only(status="REFUNDED"), newest),
        "funding_overfunded_1pct": (only(funding_status="OVERFUNDED"), newest),
        "source_chain_30pct": (
            IntentFilter(client_id=BUSY, source_chains=["ARBITRUM_TESTNET"]),
            newest,
        ),
        "destination_chain_70pct": (only(destination_chain="ARBITRUM_TESTNET"), newest),
        "sender_one_of_5000": (only(sender=one["sender"]), newest),
        "recipient_one_of_50": (only(recipient=one["recipient"]), newest),
        "session": (only(session_id=one["session_id"]), newest),
        "metadata_order_id": (only(metadata=("order_id", f"ord-{intents // 2 + 5 * 2}")), newest),
        "metadata_tier_33pct": (only(metadata=("tier", "gold")), newest),
        "created_at_last_day_open_ended": (
            only(created_after=START + timedelta(seconds=intents * 2.6 - 86_400)),
            newest,
        ),
        "created_at_one_day": (
            only(created_after=day, created_before=day + timedelta(days=1)),
            newest,
        ),
        "created_at_one_day_and_status_pending": (
            only(created_after=day, created_before=day + timedelta(days=1), status="PENDING"),
            newest,
        ),
    }


async def main_async(intents: int, clients: int, rounds: int, plans: bool) -> dict[str, Any]:
    result: dict[str, Any] = {"intents": intents, "clients": clients, "rounds": rounds}
    async with scratch_pool("list") as (_, pool), pool.acquire() as conn:
        result["load_seconds"] = round(await load(conn, intents, clients), 1)
        result["busy_client_intents"] = await conn.fetchval(
            "SELECT count(*) FROM intents WHERE client_id = $1", BUSY
        )
        result["table_and_indexes"] = await conn.fetchval(
            "SELECT pg_size_pretty(pg_total_relation_size('intents'))"
        )
        read: dict[str, Any] = {}
        for label, (where, options) in (await cases(conn, intents)).items():
            spent = []
            rows = 0
            for _ in range(rounds):
                began = time.perf_counter()
                found = await intent_list.page(
                    conn,
                    where,
                    after=options.get("after"),
                    descending=options.get("descending", True),
                    limit=101,
                )
                spent.append((time.perf_counter() - began) * 1000)
                rows = len(found)
            read[label] = {**figures(spent), "rows": rows}
            if plans:
                plan = await intent_list.explain(
                    conn,
                    where,
                    after=options.get("after"),
                    descending=options.get("descending", True),
                )
                read[label]["plan"] = plan.splitlines()
        result["read_page_of_100"] = read
        result["mean_of_p99_ms"] = round(statistics.fmean(r["p99_ms"] for r in read.values()), 3)
    return result


def run(argv: list[str]) -> None:
    args = options(
        argv,
        __doc__,
        {"plans": "print each case's plan"},
        intents=1_000_000,
        clients=100,
        rounds=300,
    )
    print_report(asyncio.run(main_async(args.intents, args.clients, args.rounds, args.plans)))
