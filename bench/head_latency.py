"""Benchmark (a): head latency, from confirmation depth to ``intent_funded`` on Kafka.

Runs ``intentd run`` as a subprocess against a dedicated anvil (chain id 84532,
automine off, so this script decides when blocks are mined). For each sample: an
intent is created, the payment is sent, the block holding it is mined, then the
blocks up to the confirmation depth; the clock starts when the mining call that
makes the payment confirmed returns, and stops when this script receives the
intent's ``intent_funded`` from Kafka. Prints p50/p90/p99/max.

    .venv/bin/python -m bench head-latency [--samples 200] [--confirmations 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
from aiokafka import AIOKafkaConsumer
from eth_account import Account
from eth_account.hdaccount import Language, generate_mnemonic
from web3 import Web3

from intentd.adapters.postgres import Pool, create_pool, migrate
from intentd.adapters.postgres.intent_inserts import PostgresIntentStore
from intentd.contract.record import IntentRow
from intentd.custody import IntentKeys
from intentd.intents.service import IntentRequest, create_intent
from intentd.intents.writer import IntentWriter
from intentd.settings import Settings, load_settings
from intentd_dev.devinfra import postgres as devinfra_postgres
from intentd_dev.devinfra.anvil import start_anvil
from intentd_dev.devinfra.contracts import deploy_token, mint
from intentd_dev.devinfra.kafka_mock import create_topics

ROOT = Path(__file__).resolve().parent.parent
TRANSFER = "0xa9059cbb"


def read_env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def bench_intent(
    pool: Pool, settings: Settings, keys: IntentKeys, token: str, payer: str
) -> IntentRow:
    """A 1-unit intent from BASE_TESTNET to ARBITRUM_TESTNET, paid and refunded to ``payer``."""
    return await create_intent(
        settings,
        IntentWriter(PostgresIntentStore(pool), keys),
        IntentRequest(
            amount="1",
            token_in=token,
            source_chain="BASE_TESTNET",
            destination_chain="ARBITRUM_TESTNET",
            recipient=payer,
            refund_address=payer,
        ),
        client_id=UUID(int=0),
        now=datetime.now(UTC),
    )


def transfer_data(to: str, amount: int) -> str:
    """Calldata of ERC-20 ``transfer(to, amount)``."""
    return TRANSFER + to[2:].lower().rjust(64, "0") + f"{amount:064x}"


async def bench_stack(infra: dict[str, str], database: str) -> tuple[str, dict[str, str]]:
    """A new database and topic prefix for one benchmark run, and the environment that
    points ``intentd --config config/local.toml`` at them (own mnemonic, consumer group
    and ports, so a run never meets another's addresses or offsets)."""
    await asyncio.to_thread(devinfra_postgres.recreate_database, database)
    db_url = devinfra_postgres.database_url(database)
    prefix = f"bench{int(time.time() * 1000)}"
    topics = [f"{prefix}.deposits.BASE_TESTNET", f"{prefix}.deposits.ARBITRUM_TESTNET"]
    topics += [f"{prefix}.{n}" for n in ("intent-events", "dlq", "actions", "action-results")]
    create_topics(infra["INTENTD_KAFKA_MOCK_CONTROL"], topics)
    env = dict(os.environ)
    env.update(
        INTENTD__DATABASE__URL=db_url,
        INTENTD_HD_MNEMONIC=generate_mnemonic(12, Language.ENGLISH),
        INTENTD__KAFKA__TOPIC_PREFIX=prefix,
        INTENTD__KAFKA__LIFECYCLE_GROUP=f"{prefix}-lifecycle",
        INTENTD__OBSERVABILITY__METRICS_PORT="0",
        INTENTD__OBSERVABILITY__LOG_LEVEL="warning",
        INTENTD__API__PORT="0",
    )
    return db_url, env


async def events_consumer(bootstrap: str, topic: str) -> AIOKafkaConsumer:
    """A group-less consumer of every partition of ``topic``, positioned at the end.

    The dev broker (librdkafka's mock) holds a fetch for its whole ``fetch_max_wait_ms``
    even when data arrives meanwhile (a real broker answers at once), so the measuring
    consumer asks with a 10 ms wait instead of aiokafka's default 500 ms, which would
    otherwise dominate the figure.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="latest", fetch_max_wait_ms=10
    )
    await consumer.start()
    await consumer.topics()
    consumer.subscribe([topic])
    while not consumer.assignment():
        await consumer.getmany(timeout_ms=100)
    for tp in consumer.assignment():
        await consumer.position(tp)
    return consumer


async def wait_for_event(consumer: AIOKafkaConsumer, intent_id: int) -> None:
    started = time.perf_counter()
    while True:
        batches = await consumer.getmany(timeout_ms=1000)
        if not batches and time.perf_counter() - started > 30:
            raise SystemExit(f"no event for intent {intent_id}")
        for records in batches.values():
            if any(orjson.loads(r.value)["intent"]["id"] == intent_id for r in records):
                return


def mine(w3: Web3, method: str, *params: Any) -> None:
    w3.provider.make_request(method, list(params))  # type: ignore[arg-type]


async def run(samples: int, confirmations: int, poll_interval: float) -> None:
    infra = read_env(ROOT / ".local/infra.env")
    deployer = Path(infra["INTENTD_DEV_DEPLOYER_KEY_FILE"]).read_text().strip()
    payer = Account.from_key(Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip())
    chain = start_anvil(84532)
    try:
        usdc = deploy_token(chain.url, deployer, "Bench USD Coin", "USDC", 6)
        usdt = deploy_token(chain.url, deployer, "Bench Tether", "USDT", 6)
        mint(chain.url, deployer, usdc, payer.address, 10**15)
        w3 = Web3(Web3.HTTPProvider(chain.url))
        mine(w3, "evm_setAutomine", False)
        db_url, env = await bench_stack(infra, "intentd_bench_latency")
        prefix = env["INTENTD__KAFKA__TOPIC_PREFIX"]
        env.update(
            INTENTD_BASE_TESTNET_RPC_URL=chain.url,
            INTENTD_BASE_TESTNET_USDC=usdc,
            INTENTD_BASE_TESTNET_USDT=usdt,
            INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS=str(confirmations),
            INTENTD__CHAINS__BASE_TESTNET__POLL_INTERVAL=str(poll_interval),
        )
        os.environ.update(env)
        settings = load_settings(ROOT / "config/local.toml")
        pool = await create_pool(db_url)
        await migrate(pool)
        log = (ROOT / ".local/run/bench-head-latency.log").open("wb")
        daemon = subprocess.Popen(
            [sys.executable, "-m", "intentd", "--config", "config/local.toml", "run"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        consumer = await events_consumer(
            settings.kafka.bootstrap_servers, f"{prefix}.intent-events"
        )
        try:
            deadline = time.monotonic() + 60
            while not await pool.fetchval(
                "SELECT count(*) FROM chain_cursors WHERE chain = 'BASE_TESTNET'"
            ):
                if daemon.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("daemon did not start; see .local/run/bench-head-latency.log")
                mine(w3, "evm_mine")
                await asyncio.sleep(0.2)
            keys = IntentKeys(settings.mnemonic())
            nonce = int(w3.eth.get_transaction_count(payer.address))
            latencies: list[float] = []
            for i in range(samples):
                intent = await bench_intent(pool, settings, keys, usdc, payer.address)
                data = transfer_data(intent.intent_address, 1_000_000)
                tx: dict[str, Any] = {
                    "to": usdc,
                    "data": data,
                    "gas": 100_000,
                    "nonce": nonce,
                    "chainId": 84532,
                    "maxFeePerGas": 10**10,
                    "maxPriorityFeePerGas": 10**9,
                }
                nonce = nonce + 1
                w3.eth.send_raw_transaction(payer.sign_transaction(tx).raw_transaction)
                mine(w3, "evm_mine")  # the block holding the payment
                if confirmations > 1:
                    mine(w3, "anvil_mine", hex(confirmations - 1))  # now it is confirmed
                started = time.perf_counter()
                await wait_for_event(consumer, intent.id)
                latencies.append((time.perf_counter() - started) * 1000)
                if (i + 1) % 50 == 0:
                    print(f"  {i + 1}/{samples} samples", flush=True)
        finally:
            await consumer.stop()
            daemon.terminate()
            daemon.wait(timeout=30)
            await pool.close()
        print(
            f"head latency, confirmation depth -> intent_funded on Kafka "
            f"({samples} samples, confirmations={confirmations}, poll_interval={poll_interval}s):"
        )
        print(
            f"  p50 {percentile(latencies, 0.5):.1f} ms   p90 {percentile(latencies, 0.9):.1f} ms"
            f"   p99 {percentile(latencies, 0.99):.1f} ms   max {max(latencies):.1f} ms"
            f"   mean {statistics.fmean(latencies):.1f} ms"
        )
    finally:
        chain.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--confirmations", type=int, default=2)
    parser.add_argument("--poll-interval", type=float, default=0.05)
    args = parser.parse_args(argv)
    asyncio.run(run(args.samples, args.confirmations, args.poll_interval))


if __name__ == "__main__":
    main()
