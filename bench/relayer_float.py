"""Benchmark: what reading the relayer's float costs PostgreSQL (docs/execution.md,
"The relayer's float").

``python -m bench relayer-float [--intents N] [--actions A] [--rounds R]`` creates a
database of its own, migrates it, loads N intents as ``bench/intent_list.py`` does (the
destination split 30/70 between the two test chains), the newest 5 % of them PENDING
(as they are: PENDING intents are those created within their expiry), A open prefills and
A open relayer repayments per chain (ready and submitted), and 20 A confirmed relayer
transfers per chain. Then, R times each, it times:

- ``exposure``: the executor's one statement (reserved, owed, pending, newest paid) that
  runs every ``liquidity.read_interval`` (5 s) per chain;
- ``relayer_commitments``: the prefill check's lock and sums, once per prefill;
- ``load_float``: the API's load of ``relayer_float``, every ``liquidity.view_refresh``
  (1 s) per API process.

p50, p99 and max in ms, as JSON (``--plans``: the plan of ``exposure`` first). The
database is dropped at the end.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from bench.cli import options, print_report
from bench.intent_list import CHAINS, load
from bench.scratch import scratch_pool
from bench.timing import timed
from intentd.adapters.postgres import Connection, relayer_float
from intentd.domain.actions import SignerKind
from intentd.execution.float_figures import FloatRow

RELAYER = "0x" + "3c" * 20
TOKEN = "0x" + "7c" * 20


async def seed(conn: Connection, actions: int) -> None:
    """The PENDING intents made the newest ones (as they are: created within their
    expiry, an hour by default), open prefills and repayments, and confirmed relayer
    transfers, on each chain."""
    pending = await conn.fetchval("SELECT count(*) FROM intents WHERE status = 'PENDING'")
    await conn.execute("UPDATE intents SET status = 'EXPIRED' WHERE status = 'PENDING'")
    await conn.execute(
        "UPDATE intents SET status = 'PENDING' WHERE id > (SELECT max(id) FROM intents) - $1",
        pending,
    )
    await conn.execute("VACUUM ANALYZE intents")
    for offset, chain in enumerate(CHAINS):
        await conn.execute(
            """
            INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address,
                                 status, signer_kind)
            SELECT n, k.kind, $5::int + n, $1, $2, 1000000, $3,
                   CASE WHEN n % 2 = 0 THEN 'ready' ELSE 'submitted' END,
                   CASE k.kind WHEN 'prefill' THEN 'relayer' ELSE 'intent' END
              FROM generate_series(1, $4::int) AS n,
                   (VALUES ('prefill'), ('relayer_refund')) AS k(kind)
            """,
            chain,
            TOKEN,
            RELAYER,
            actions,
            10_000_000 * (2 * offset + 1),
        )
        await conn.execute(
            """
            INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address,
                                 status, signer_kind)
            SELECT n, 'prefill', $5::int + n, $1, $2, 1000000, $3, 'confirmed', 'relayer'
              FROM generate_series(1, $4::int) AS n
            """,
            chain,
            TOKEN,
            RELAYER,
            20 * actions,
            10_000_000 * (2 * offset + 2),
        )
        await conn.execute(
            """
            INSERT INTO chain_transactions (action_id, purpose, chain, signer, nonce, tx_hash,
                   raw_tx, to_address, value, gas_limit, max_fee_per_gas,
                   max_priority_fee_per_gas, status, block_number)
            SELECT a.id, 'transfer', a.chain, $2, a.id, '0x' || md5(a.id::text || a.chain),
                   '\\x00', $3, 0, 50000, 1, 1, 'confirmed', a.id
              FROM actions a WHERE a.chain = $1 AND a.status = 'confirmed'
            """,
            chain,
            RELAYER,
            TOKEN,
        )
        rows = [FloatRow(SignerKind.RELAYER, TOKEN, RELAYER, 10**12, 1)]
        await relayer_float.save_float(conn, chain, rows, datetime.now(UTC))
    await conn.execute("VACUUM ANALYZE actions")
    await conn.execute("VACUUM ANALYZE chain_transactions")


async def measure(intents: int, actions: int, rounds: int, plans: bool) -> dict[str, Any]:
    async with scratch_pool("float") as (_, pool), pool.acquire() as conn:
        loaded = await load(conn, intents, 50)
        await seed(conn, actions)
        pending = await conn.fetchval("SELECT count(*) FROM intents WHERE status = 'PENDING'")
        chain = CHAINS[0]

        async def commitments() -> None:
            async with conn.transaction():
                await relayer_float.relayer_commitments(conn, chain, RELAYER)

        if plans:
            plan = await conn.fetch(
                "EXPLAIN (ANALYZE, BUFFERS) " + relayer_float._EXPOSURE,
                chain,
                RELAYER,
                3600.0,
            )
            print("\n".join(r[0] for r in plan))
        results = {
            "exposure": await timed(
                rounds, lambda: relayer_float.exposure(conn, chain, RELAYER, 3600.0)
            ),
            "relayer_commitments": await timed(rounds, commitments),
            "load_float": await timed(rounds, lambda: relayer_float.load_float(conn)),
        }
    return {
        "intents": intents,
        "pending_intents": pending,
        "open_actions_per_chain": 2 * actions,
        "confirmed_transfers_per_chain": 20 * actions,
        "load_seconds": round(loaded, 1),
        "rounds": rounds,
        **results,
    }


def run(argv: list[str]) -> None:
    args = options(
        argv,
        __doc__,
        {"plans": "print the plan of exposure"},
        intents=1_000_000,
        actions=1_000,
        rounds=50,
    )
    print_report(asyncio.run(measure(args.intents, args.actions, args.rounds, args.plans)))
