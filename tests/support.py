"""Helpers for integration and end-to-end tests: Kafka readers, daemon subprocesses."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import aiohttp
import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.intent_inserts import PostgresIntentStore
from intentd.contract.record import IntentRow
from intentd.custody import IntentKeys
from intentd.intents.service import IntentRequest, create_intent
from intentd.intents.writer import IntentWriter
from intentd.lifecycle.log_gaps import LogGap
from intentd.settings import Settings
from intentd_dev.contract_check import check_topic_value

ROOT = Path(__file__).resolve().parent.parent
PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


async def unexpected_gap(gap: LogGap) -> None:
    """The gap recovery of a test whose logs keep everything: a gap fails it (a new
    group's partitions, with no committed position, are not one)."""
    if gap.uncommitted:
        return
    raise AssertionError(f"unexpected gap in a consumed log: {gap}")


class TopicReader:
    """Reads a whole topic from the beginning, without a consumer group.

    Every record of a topic the AsyncAPI document describes (deposits, action results,
    intent events) is checked against it as it is read (``intentd_dev.contract_check``);
    ``contract=False`` reads a topic a test fills with malformed messages on purpose.
    """

    def __init__(
        self, bootstrap: str, topic: str, *, from_end: bool = False, contract: bool = True
    ) -> None:
        self.topic = topic
        self._contract = contract
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="latest" if from_end else "earliest",
        )
        self.messages: list[Any] = []

    async def __aenter__(self) -> TopicReader:
        await self._consumer.start()
        if self.topic not in await self._consumer.topics():
            await self._consumer.stop()
            raise AssertionError(f"topic {self.topic} does not exist")
        self._take(await attach(self._consumer, self.topic))
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._consumer.stop()

    async def wait_for(
        self, predicate: Callable[[list[Any]], bool], *, timeout: float = 30.0
    ) -> list[Any]:
        """Read until ``predicate(all messages so far)`` holds; fail on timeout."""
        deadline = time.monotonic() + timeout
        while not predicate(self.messages):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out on {self.topic}; got {self.messages!r}")
            batches = await self._consumer.getmany(timeout_ms=200)
            for records in batches.values():
                self._take(records)
        return self.messages

    async def drain(self, seconds: float) -> list[Any]:
        """Read whatever arrives within ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            batches = await self._consumer.getmany(timeout_ms=100)
            for records in batches.values():
                self._take(records)
        return self.messages

    async def read_to_end(self, within: float = 30.0) -> list[Any]:
        """Read up to each partition's end as it is now: all that was published before
        (not whatever a fixed time reads, which a loaded machine makes less)."""
        ends = await self._consumer.end_offsets(list(self._consumer.assignment()))
        deadline = time.monotonic() + within
        for partition, end in ends.items():
            while await self._consumer.position(partition) < end:
                assert time.monotonic() < deadline, f"{self.topic} not read to its end"
                await self.drain(0.05)
        return self.messages

    def _take(self, records: list[Any]) -> None:
        if self._contract:
            for record in records:
                check_topic_value(self.topic, record.value)
        self.messages.extend(records)


async def attach(consumer: AIOKafkaConsumer, topic: str, timeout: float = 10.0) -> list[Any]:
    """Subscribe without a group (all partitions), wait until positions are fixed, and
    return the records fetched meanwhile."""
    consumer.subscribe([topic])
    fetched: list[Any] = []
    deadline = time.monotonic() + timeout
    while not consumer.assignment():
        if time.monotonic() > deadline:
            raise AssertionError(f"no partitions of {topic} were assigned")
        for records in (await consumer.getmany(timeout_ms=50)).values():
            fetched.extend(records)
    for tp in consumer.assignment():
        await consumer.position(tp)
    return fetched


def json_values(messages: list[Any]) -> list[dict[str, Any]]:
    return [orjson.loads(m.value) for m in messages]


async def produce(bootstrap: str, topic: str, items: list[tuple[str, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all")
    await producer.start()
    try:
        for key, value in items:
            await producer.send_and_wait(topic, value, key=key.encode())
    finally:
        await producer.stop()


async def new_intent(
    pool: Pool,
    settings: Settings,
    *,
    amount: str = "10",
    chain: str = "BASE_TESTNET",
    token: str | None = None,
    expires_in: int | None = None,
) -> IntentRow:
    source = settings.chains[chain]
    destination = next(name for name in settings.chains if name != chain)
    token_in = token or next(t.address for t in source.tokens if t.symbol == "USDC")
    request = IntentRequest(
        amount=amount,
        token_in=token_in,
        source_chain=chain,
        destination_chain=destination,
        recipient=PAYEE,
        refund_address=PAYEE,
        expires_in=expires_in,
    )
    return await create_intent(
        settings,
        IntentWriter(PostgresIntentStore(pool), IntentKeys(settings.mnemonic())),
        request,
        client_id=UUID(settings.intents.default_client_id),
        now=datetime.now(UTC),
    )


def daemon_env(settings: Settings, **extra: str) -> dict[str, str]:
    """Environment that points ``config/local.toml`` at this test session's resources."""
    env = dict(os.environ)
    env.update(
        INTENTD__DATABASE__URL=settings.database.url.get_secret_value(),
        INTENTD_HD_MNEMONIC=settings.mnemonic(),
        INTENTD__KAFKA__TOPIC_PREFIX=settings.kafka.topic_prefix,
        INTENTD__KAFKA__LIFECYCLE_GROUP=f"{settings.kafka.topic_prefix}-lifecycle",
        INTENTD__WEBHOOKS__GROUP=f"{settings.kafka.topic_prefix}-webhooks",
        INTENTD__OBSERVABILITY__METRICS_PORT="0",
        INTENTD__API__PORT="0",
        INTENTD__OBSERVABILITY__LOG_LEVEL="debug",
        # config/local.toml checks creates against the relayer's float, which the daemon's
        # executors store within seconds of starting; tests create at once (and may set it).
        INTENTD__LIQUIDITY__ADMISSION="false",
    )
    env.update(extra)
    return env


def run_cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    """``intentd --config config/local.toml ARGS`` as a user runs it; its JSON output."""
    result = subprocess.run(
        [sys.executable, "-m", "intentd", "--config", str(ROOT / "config/local.toml"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    record: dict[str, Any] = orjson.loads(result.stdout)
    return record


def start_daemon(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``intentd --config config/local.toml ARGS`` as a user runs it, logging to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "intentd", "--config", str(ROOT / "config/local.toml"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
        )


async def until_serving(
    process: subprocess.Popen[bytes], url: str, log: Path, seconds: float = 60.0
) -> None:
    """Until ``GET url`` answers 200; fails with the tail of ``process``'s ``log`` if it
    ends first or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession() as http:
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            try:
                async with http.get(url) as answer:
                    if answer.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)


async def wait_exit(process: subprocess.Popen[bytes], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError("process did not exit in time")
        await asyncio.sleep(0.1)
    return process.returncode


TRANSFER_ABI: list[dict[str, Any]] = [
    {
        "name": "transfer",
        "type": "function",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    },
    {
        "name": "balanceOf",
        "type": "function",
        "stateMutability": "view",
        "inputs": [{"name": "owner", "type": "address"}],
        "outputs": [{"name": "", "type": "uint256"}],
    },
]


def send_payments(rpc_url: str, key: str, payments: list[tuple[str, str, int]]) -> None:
    """Send ``(token, to, amount)`` transfers from ``key`` (native: NATIVE_TOKEN) and
    wait until every one is mined with status 1."""
    from eth_account import Account
    from web3 import Web3

    from intentd.settings import NATIVE_TOKEN

    w3 = Web3(Web3.HTTPProvider(rpc_url))
    account = Account.from_key(key)
    nonce = int(w3.eth.get_transaction_count(account.address, "pending"))
    hashes = []
    for token, to, amount in payments:
        tx: dict[str, Any] = {
            "from": account.address,
            "chainId": w3.eth.chain_id,
            "nonce": nonce,
            "maxFeePerGas": w3.eth.gas_price * 2 + 10**9,
            "maxPriorityFeePerGas": 10**9,
        }
        nonce += 1
        if token == NATIVE_TOKEN:
            tx.update(to=Web3.to_checksum_address(to), value=amount, gas=21_000)
        else:
            contract = w3.eth.contract(address=Web3.to_checksum_address(token), abi=TRANSFER_ABI)
            tx = contract.functions.transfer(
                Web3.to_checksum_address(to), amount
            ).build_transaction(
                {**tx, "gas": 100_000}  # type: ignore[arg-type]
            )
        signed = account.sign_transaction(tx)
        hashes.append(w3.eth.send_raw_transaction(signed.raw_transaction))
    for tx_hash in hashes:
        receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=60)
        assert receipt["status"] == 1, receipt


def balance(rpc_url: str, token: str, owner: str) -> int:
    """ERC-20 balance, or the native balance for NATIVE_TOKEN."""
    from web3 import Web3

    from intentd.settings import NATIVE_TOKEN

    w3 = Web3(Web3.HTTPProvider(rpc_url))
    if token == NATIVE_TOKEN:
        return int(w3.eth.get_balance(Web3.to_checksum_address(owner)))
    contract = w3.eth.contract(address=Web3.to_checksum_address(token), abi=TRANSFER_ABI)
    return int(contract.functions.balanceOf(Web3.to_checksum_address(owner)).call())
