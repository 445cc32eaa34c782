"""Retention never loses a deposit silently: the lifecycle against the Kafka dev broker,
whose partitions drop their oldest segments past a few MB (as ``retention.bytes`` does),
PostgreSQL and the shared anvil chain (read only, but for one token mint).

The lifecycle applies a first message of a partition and stops (an outage); the
poller's message of a real deposit follows on the same partition, then enough records
for the broker to delete it unread. When the lifecycle comes back, its committed
position is below the log start: it must alert and credit the deposit once, from the
chain, rather than read on from the log start (what ``auto_offset_reset="earliest"``
did: the deposit was never credited). The same when it comes back with no committed
position (its offsets expired, or its group was renamed) but the partition's applied
block is recorded. Decision logic on fakes:
tests/unit/adapters/test_kafka_positions.py, tests/unit/scanning/test_gap_recovery_on_fakes.py.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from prometheus_client import REGISTRY
from tests.support import new_intent

from intentd.adapters.evm.chain_reader import open_chain
from intentd.adapters.evm.verifier_chains import EvmVerifierChains
from intentd.adapters.kafka import KafkaPublisher, make_consumer
from intentd.adapters.kafka.lifecycle_inbox import KafkaDeadLetters, KafkaInbox
from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.cursor_store import WINDOW
from intentd.adapters.postgres.lifecycle_uow import PostgresStore
from intentd.adapters.postgres.log_positions import PostgresLogPositions
from intentd.chain.blocks import BlockRange
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.range_deposits import scan_range
from intentd.indexer.publishing import deposit_payload
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.consumer import LifecycleConsumer
from intentd.messages import DepositMessage, deposits_topic, encode
from intentd.scanning.gap_recovery import LogGapRecovery
from intentd.settings import Settings
from intentd_dev.devchain import MINT, DevChain, call_data

pytestmark = pytest.mark.integration

CHAIN = "BASE_TESTNET"
FILLER = b"f" * 100_000
"""A record the lifecycle dead-letters; enough of them push the deposit out of the log."""


def out_of_range_count(topic: str, partition: int) -> float:
    labels = {"topic": topic, "partition": str(partition)}
    return REGISTRY.get_sample_value("intentd_kafka_offset_out_of_range_total", labels) or 0.0


async def mint_to(settings: Settings, to: str, amount: int) -> tuple[bytes, int, str]:
    """Mint ``amount`` test USDC to ``to`` on the shared chain; the poller's message of
    it, its block and its block's hash."""
    config = settings.chains[CHAIN]
    usdc = next(t.address for t in config.tokens if t.symbol == "USDC")
    async with DevChain(config.rpc_urls[0]) as chain:
        minter = (await chain.accounts())[8]
        receipt = await chain.receipt(
            await chain.send(minter, usdc, data=call_data(MINT, to, amount))
        )
    block = int(receipt["blockNumber"], 16)
    _, reader = open_chain(config, attempts=3)
    try:
        blocks = BlockRange(block, block)
        raw = await reader.read_range(blocks)
        headers, [found] = await scan_range(
            CHAIN, reader, raw, blocks, tokens=[usdc.lower()], watched=WatchedAddresses([to])
        )
    finally:
        await reader.close()
    observed = int(time.time() * 1000)
    return deposit_payload(CHAIN, config.chain_id, found, observed), block, headers[0].hash


@asynccontextmanager
async def lifecycle_running(settings: Settings, pool: Pool, group: str) -> AsyncIterator[None]:
    publisher = KafkaPublisher(settings.kafka)
    await publisher.start()
    store = PostgresStore(pool)
    positions = PostgresLogPositions(pool)
    lifecycle = LifecycleConsumer(
        settings,
        store,
        KafkaDeadLetters(publisher),
        book=ChainBook.of_settings(settings),
        positions=positions,
    )
    chains = EvmVerifierChains()
    recovery = LogGapRecovery(
        settings,
        store,
        positions,
        chains,
        KafkaDeadLetters(publisher),
        book=ChainBook.of_settings(settings),
        reorg_window=WINDOW,
    )
    consumer = make_consumer(settings.kafka, lifecycle.topics, group_id=group)
    await consumer.start()
    stop = asyncio.Event()
    task = asyncio.create_task(
        lifecycle.run(KafkaInbox(consumer, stop, recover=recovery.recover), stop)
    )
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await consumer.stop()
        await chains.close()
        await publisher.stop()


async def committed(settings: Settings, group: str, tp: TopicPartition) -> int | None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        group_id=group,
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        found: int | None = await consumer.committed(tp)
        return found
    finally:
        await consumer.stop()


async def wait_until_committed(
    settings: Settings, group: str, tp: TopicPartition, offset: int, timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while (await committed(settings, group, tp) or 0) < offset:
        assert time.monotonic() < deadline, f"{tp} not committed up to {offset}"
        await asyncio.sleep(0.2)


@pytest.mark.parametrize("renamed", [False, True], ids=["same-group", "renamed-group"])
async def test_a_deposit_retention_deleted_unread_is_alerted_on_and_credited_once(
    pool: Pool, isolated_settings: Settings, renamed: bool
) -> None:
    """``renamed``: the lifecycle comes back under another group name (or its offsets
    expired): no committed position, but the partition's applied block is recorded."""
    settings = isolated_settings
    topic = deposits_topic(settings.kafka.topic_prefix, CHAIN)
    group = f"g-{secrets.token_hex(4)}"
    intent = await new_intent(pool, settings, amount="10")
    payload, block, block_hash = await mint_to(settings, intent.intent_address, 10_000_000)
    earlier = DepositMessage.model_validate_json(payload).model_copy(
        update={
            "id": f"{CHAIN}:0x{'1' * 64}:x:0",
            "tx_hash": "0x" + "1" * 64,
            "to_address": "0x" + "2" * 40,  # nobody's: applied, credits nothing
            "block_number": block - 1,
        }
    )
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers)
    await producer.start()
    try:
        sent = await producer.send_and_wait(
            topic, encode(earlier), key=intent.intent_address.encode()
        )
        tp = TopicPartition(topic, sent.partition)
        async with lifecycle_running(settings, pool, group):  # a new group: from the start
            await wait_until_committed(settings, group, tp, 1)
        # The outage: the poller publishes the deposit, retention deletes it unread.
        lost = await producer.send_and_wait(topic, payload, key=intent.intent_address.encode())
        assert lost.offset == 1
        log_start = 0
        while log_start <= lost.offset:
            batch = [
                await producer.send(topic, FILLER, key=intent.intent_address.encode())
                for _ in range(20)
            ]
            await asyncio.gather(*batch)
            log_start = await low_watermark(settings, tp)
        await pool.execute(
            "INSERT INTO chain_cursors (chain, block_number, block_hash) VALUES ($1, $2, $3)"
            " ON CONFLICT (chain) DO UPDATE SET block_number = $2, block_hash = $3",
            CHAIN,
            block,
            block_hash,
        )
        end = await high_watermark(settings, tp)
    finally:
        await producer.stop()
    alerts = out_of_range_count(topic, tp.partition)

    if renamed:
        group = f"g-{secrets.token_hex(4)}"
    async with lifecycle_running(settings, pool, group):
        await wait_until_committed(settings, group, tp, end)

    row = await pool.fetchrow("SELECT received, status FROM intents WHERE id = $1", intent.id)
    assert row["received"] == 10_000_000, "the deposit deleted unread was skipped"
    assert row["status"] == "FUNDED"
    credited = await pool.fetchval("SELECT count(*) FROM deposits WHERE intent_id = $1", intent.id)
    assert credited == 1
    watched = await pool.fetchval(
        "SELECT count(*) FROM trigger_deposits t JOIN deposits d ON d.id = t.deposit_id"
        " WHERE d.intent_id = $1",
        intent.id,
    )
    assert watched == 1  # until final, should a reorg have orphaned it during the gap
    assert out_of_range_count(topic, tp.partition) == alerts + 1


async def low_watermark(settings: Settings, tp: TopicPartition) -> int:
    return (await watermarks(settings, tp))[0]


async def high_watermark(settings: Settings, tp: TopicPartition) -> int:
    return (await watermarks(settings, tp))[1]


async def watermarks(settings: Settings, tp: TopicPartition) -> tuple[int, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka.bootstrap_servers)
    await consumer.start()
    try:
        start = (await consumer.beginning_offsets([tp]))[tp]
        end = (await consumer.end_offsets([tp]))[tp]
        return int(start), int(end)
    finally:
        await consumer.stop()
