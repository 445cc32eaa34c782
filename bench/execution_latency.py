"""Benchmark (issue 3): FUNDED -> prefill broadcast, and user deposit -> intent_completed.

Runs ``intentd run`` (pollers, lifecycle, executors) against the local anvil chains
(1-second blocks) with one confirmation, on a database and topics of its own. For
each sample an intent is created and paid in test USDC; then

- *broadcast*: from the commit that made the intent FUNDED (the prefill action's
  ``created_at``) to the executor's first broadcast of the prefill (``sent_at`` of its
  transaction), both stamped by PostgreSQL;
- *completed*: from the moment the payer's transaction is broadcast to the arrival of
  ``intent_completed`` on Kafka (mining the deposit, confirming it, the prefill, its
  mining and confirmation included).

    .venv/bin/python -m bench execution-latency [--samples 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from eth_account import Account
from web3 import Web3

from bench.head_latency import (
    bench_intent,
    bench_stack,
    events_consumer,
    percentile,
    read_env,
    transfer_data,
)
from intentd.adapters.postgres import create_pool, migrate
from intentd.custody import IntentKeys
from intentd.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent


def figures(name: str, values: list[float]) -> str:
    return (
        f"{name}: p50 {percentile(values, 0.5):.0f} ms   p90 {percentile(values, 0.9):.0f} ms"
        f"   p99 {percentile(values, 0.99):.0f} ms   max {max(values):.0f} ms"
        f"   mean {statistics.fmean(values):.0f} ms"
    )


async def run(samples: int) -> None:
    infra = read_env(ROOT / ".local/infra.env")
    payer = Account.from_key(Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip())
    usdc = infra["INTENTD_BASE_TESTNET_USDC"]
    w3 = Web3(Web3.HTTPProvider(infra["INTENTD_BASE_TESTNET_RPC_URL"]))
    db_url, env = await bench_stack(infra, "intentd_bench_execution")
    prefix = env["INTENTD__KAFKA__TOPIC_PREFIX"]
    env.update(
        INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__BASE_TESTNET__POLL_INTERVAL="0.05",
        INTENTD__CHAINS__ARBITRUM_TESTNET__POLL_INTERVAL="0.05",
    )
    os.environ.update(env)
    settings = load_settings(ROOT / "config/local.toml")
    pool = await create_pool(db_url)
    await migrate(pool)
    log = (ROOT / ".local/run/bench-execution-latency.log").open("wb")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "intentd", "--config", "config/local.toml", "run"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    consumer = await events_consumer(settings.kafka.bootstrap_servers, f"{prefix}.intent-events")
    completed: list[float] = []
    try:
        deadline = time.monotonic() + 60
        while await pool.fetchval("SELECT count(*) FROM chain_cursors") < 2:
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("daemon did not start; see .local/run/bench-execution-latency.log")
            await asyncio.sleep(0.2)
        keys = IntentKeys(settings.mnemonic())
        for i in range(samples):
            intent = await bench_intent(pool, settings, keys, usdc, payer.address)
            data = transfer_data(intent.intent_address, intent.total_due)
            tx: dict[str, Any] = {
                "to": usdc,
                "data": data,
                "gas": 100_000,
                "chainId": 84532,
                "nonce": w3.eth.get_transaction_count(payer.address, "pending"),
                "maxFeePerGas": w3.eth.gas_price * 2 + 10**9,
                "maxPriorityFeePerGas": 10**9,
            }
            signed = payer.sign_transaction(tx)
            started = time.perf_counter()
            w3.eth.send_raw_transaction(signed.raw_transaction)
            while True:
                batches = await consumer.getmany(timeout_ms=1000)
                if not batches and time.perf_counter() - started > 60:
                    raise SystemExit(f"intent {intent.id} did not complete")
                events = [orjson.loads(r.value) for rs in batches.values() for r in rs]
                if any(
                    e["intent"]["id"] == intent.id and e["type"] == "intent_completed"
                    for e in events
                ):
                    break
            completed.append((time.perf_counter() - started) * 1000)
            if (i + 1) % 10 == 0:
                print(f"  {i + 1}/{samples} samples", flush=True)
        rows = await pool.fetch(
            """
            SELECT EXTRACT(EPOCH FROM (t.sent_at - a.created_at)) * 1000 AS ms
              FROM actions a
              JOIN LATERAL (SELECT min(sent_at) AS sent_at FROM chain_transactions
                             WHERE action_id = a.id) t ON TRUE
             WHERE a.kind = 'prefill' AND t.sent_at IS NOT NULL
            """
        )
        broadcast = [float(r["ms"]) for r in rows]
    finally:
        await consumer.stop()
        daemon.terminate()
        daemon.wait(timeout=60)
        await pool.close()
    print(f"execution latency ({samples} intents, 1 s blocks, 1 confirmation):")
    print("  " + figures("FUNDED -> prefill broadcast", broadcast))
    print("  " + figures("deposit broadcast -> intent_completed", completed))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args(argv)
    asyncio.run(run(args.samples))


if __name__ == "__main__":
    main()
