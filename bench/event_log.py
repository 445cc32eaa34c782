"""Benchmark: the event log's write cost in the lifecycle transaction, and its reads.

``python -m bench event-log [--events N] [--clients C] [--rounds R]`` creates a
database of its own (on the local infrastructure's PostgreSQL), migrates it, and:

1. **write**: R lifecycle-like transactions (lock an intent row, write its outbox row),
   then R more that also write the event log row (``adapters.postgres.event_log.record``), one
   connection, one after the other: the mean and p99 of each, and the difference;
2. fills the log with N events (about 1.4 KiB envelopes) in transactions of 50, half
   of them one client's, the rest spread over C - 1 others;
3. **read**: ``event_log.page`` and ``event_log.timeline`` as the API calls them, for
   the busy client, R times each: the first page newest first, a page from a cursor
   in the middle, oldest first from near the end (catching up), a rare type, one
   hour of ``created_at``, one intent's timeline. p50 and p99 in ms, as JSON.

The database is dropped at the end.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from bench.cli import options, print_report
from bench.scratch import scratch_pool
from bench.timing import figures, timed
from intentd.adapters.postgres import Pool, event_log
from intentd.adapters.postgres.event_log import EventFilter, LogPosition
from intentd.contract.events import event_id

BUSY = uuid.UUID(int=1)
INTENTS_PER_CLIENT = 200
TYPES = ("intent_funded", "intent_initiated", "intent_completed", "intent_refunded")
START = datetime(2026, 11, 1, tzinfo=UTC)


def envelope(intent_id: int, sequence: int, kind: str, at: datetime) -> dict[str, Any]:
    record = {f"field_{i}": "0x" + "ab" * 20 for i in range(20)}
    return {
        "id": event_id(intent_id, sequence),
        "type": kind,
        "api_version": "v1",
        "created_at": at.isoformat(),
        "sequence": sequence,
        "mode": "test",
        "intent": {"id": intent_id, **record},
        "data": {"funding": {"status": "EXACT", "received": "10", "total": "10"}},
    }


async def make_intents(pool: Pool, clients: list[uuid.UUID]) -> dict[uuid.UUID, list[int]]:
    owned: dict[uuid.UUID, list[int]] = {}
    for client in clients:
        rows = await pool.fetch(
            """INSERT INTO intents (client_id, request_hash, initial_amount, source_chain,
                 destination_chain, token_in, token_out, token_out_decimals,
                 asset_token_symbol, asset_token_decimals, total_due, amount_out,
                 address_index, intent_address, recipient, refund_address, status, expires_at)
               SELECT $1, 'h', '10', 'BASE_TESTNET', 'ARBITRUM_TESTNET', '0x', '0x', 6, 'USDC',
                 6, 10, 10, n, '0x' || lpad(to_hex(n), 40, '0'), '0x', '0x', 'PENDING', now()
               FROM generate_series($2::bigint, $2::bigint + $3 - 1) AS n RETURNING id""",
            client,
            await pool.fetchval("SELECT coalesce(max(address_index), 0) + 1 FROM intents"),
            INTENTS_PER_CLIENT,
        )
        owned[client] = [r["id"] for r in rows]
    return owned


async def fill(pool: Pool, owned: dict[uuid.UUID, list[int]], events: int) -> None:
    """``events`` events, half of them BUSY's, one a minute of ``created_at`` apart."""
    others = [c for c in owned if c != BUSY]
    sequences: dict[int, int] = {}
    async with pool.acquire() as conn:
        for start in range(0, events, 50):
            async with conn.transaction():
                rows = []
                for n in range(start, min(start + 50, events)):
                    client = BUSY if n % 2 == 0 else others[n % len(others)]
                    intent_id = owned[client][n % INTENTS_PER_CLIENT]
                    sequence = sequences[intent_id] = sequences.get(intent_id, 0) + 1
                    kind = "intent_expired" if n % 200 == 0 else TYPES[n % len(TYPES)]
                    at = START + timedelta(minutes=n)
                    body = envelope(intent_id, sequence, kind, at)
                    text = orjson.dumps(body).decode()
                    rows.append(
                        (uuid.UUID(body["id"]), intent_id, client, "test", kind, sequence, at, text)
                    )
                await conn.executemany(
                    "INSERT INTO intent_events (id, intent_id, client_id, mode, type,"
                    " sequence, created_at, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)",
                    rows,
                )
    await pool.execute("ANALYZE intent_events")


async def writes(pool: Pool, intent_id: int, client: uuid.UUID, rounds: int) -> dict[str, Any]:
    sequence = 10_000_000

    async def one(with_log: bool) -> None:
        nonlocal sequence
        sequence += 1
        body = envelope(intent_id, sequence, "intent_funded", datetime.now(UTC))
        payload = orjson.dumps(body)
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT id FROM intents WHERE id = $1 FOR UPDATE", intent_id)
            await conn.execute(
                "INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)",
                "bench.intent-events",
                str(intent_id),
                payload,
            )
            if with_log:
                await event_log.record(
                    conn,
                    intent_id=intent_id,
                    client_id=client,
                    envelope=body,
                    payload=payload,
                    created_at=datetime.now(UTC),
                )

    # alternated, so that drift (caches, checkpoints) weighs on both alike
    outbox_only: list[float] = []
    with_log: list[float] = []
    for _ in range(rounds):
        for spent, flag in ((outbox_only, False), (with_log, True)):
            began = time.perf_counter()
            await one(flag)
            spent.append((time.perf_counter() - began) * 1000)
    return {
        "outbox_only": figures(outbox_only),
        "outbox_and_event_log": figures(with_log),
        "added_mean_ms": round(statistics.fmean(with_log) - statistics.fmean(outbox_only), 3),
    }


async def reads(pool: Pool, owned: dict[uuid.UUID, list[int]], rounds: int) -> dict[str, Any]:
    busy = EventFilter(client_id=BUSY, modes=["test"])
    async with pool.acquire() as conn:
        every = await conn.fetch(
            "SELECT tx_id, position FROM intent_events WHERE client_id = $1"
            " ORDER BY tx_id, position",
            BUSY,
        )
        middle = LogPosition(every[len(every) // 2]["tx_id"], every[len(every) // 2]["position"])
        near_end = LogPosition(every[-30]["tx_id"], every[-30]["position"])
        hour = START + timedelta(minutes=len(every))
        cases: dict[str, Callable[[], Awaitable[Any]]] = {
            "newest_first_page": lambda: event_log.page(
                conn, busy, after=None, descending=True, limit=101
            ),
            "newest_first_from_middle_cursor": lambda: event_log.page(
                conn, busy, after=middle, descending=True, limit=101
            ),
            "oldest_first_catch_up_near_end": lambda: event_log.page(
                conn, busy, after=near_end, descending=False, limit=101
            ),
            "rare_type_intent_expired": lambda: event_log.page(
                conn,
                EventFilter(client_id=BUSY, modes=["test"], types=["intent_expired"]),
                after=None,
                descending=True,
                limit=101,
            ),
            "one_hour_of_created_at": lambda: event_log.page(
                conn,
                EventFilter(
                    client_id=BUSY,
                    modes=["test"],
                    created_after=hour,
                    created_before=hour + timedelta(hours=1),
                ),
                after=None,
                descending=True,
                limit=101,
            ),
            "one_intent_timeline": lambda: event_log.timeline(
                conn, BUSY, owned[BUSY][7], after_sequence=0, limit=101
            ),
        }
        return {name: await timed(rounds, call) for name, call in cases.items()}


async def main_async(events: int, clients: int, rounds: int) -> dict[str, Any]:
    async with scratch_pool("events") as (_, pool):
        ids = [BUSY, *(uuid.uuid4() for _ in range(clients - 1))]
        owned = await make_intents(pool, ids)
        write = await writes(pool, owned[BUSY][0], BUSY, rounds)
        began = time.perf_counter()
        await fill(pool, owned, events)
        filled = time.perf_counter() - began
        size = await pool.fetchval("SELECT pg_size_pretty(pg_total_relation_size('intent_events'))")
        read = await reads(pool, owned, rounds)
    return {
        "events": events,
        "clients": clients,
        "rounds": rounds,
        "write_per_transaction": write,
        "fill_events_per_second": round(events / filled),
        "table_and_indexes": size,
        "read": read,
    }


def run(argv: list[str]) -> None:
    args = options(argv, __doc__, events=200_000, clients=100, rounds=500)
    print_report(asyncio.run(main_async(args.events, args.clients, args.rounds)))
