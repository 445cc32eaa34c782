"""The lifecycle on real PostgreSQL and Kafka: credits once, whatever the delivery."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from tests.lifecycle_calls import Outcome, apply_deposit, apply_retraction
from tests.support import (
    TopicReader,
    daemon_env,
    json_values,
    new_intent,
    produce,
    start_daemon,
    unexpected_gap,
    wait_exit,
)

from intentd.adapters.kafka import KafkaPublisher
from intentd.adapters.kafka.lifecycle_inbox import KafkaDeadLetters, KafkaInbox
from intentd.adapters.postgres import Pool, intent_store
from intentd.adapters.postgres.lifecycle_uow import PostgresStore
from intentd.adapters.postgres.outbox import OutboxRelay
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.faults import CRASH_EXIT_CODE
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.consumer import LifecycleConsumer
from intentd.messages import (
    DepositMessage,
    RetractionMessage,
    deposit_id,
    deposits_topic,
    dlq_topic,
    encode,
    events_topic,
)
from intentd.settings import NATIVE_TOKEN, Settings

pytestmark = pytest.mark.integration
CHAIN = "BASE_TESTNET"


def deposit(
    settings: Settings,
    to: str,
    amount: int,
    *,
    token: str | None = None,
    chain: str = CHAIN,
    log_index: int = 0,
    transfer_index: int = 0,
    block_hash: str | None = None,
    tx_hash: str | None = None,
) -> DepositMessage:
    usdc = next(t.address for t in settings.chains[CHAIN].tokens if t.symbol == "USDC")
    tx = tx_hash or "0x" + secrets.token_hex(32)
    coin = (token or usdc).lower()
    return DepositMessage(
        id=deposit_id(chain, tx, coin, transfer_index),
        chain=chain,
        chain_id=settings.chains[chain].chain_id,
        tx_hash=tx,
        log_index=log_index,
        transfer_index=transfer_index,
        block_number=100,
        block_hash=block_hash or "0x" + secrets.token_hex(32),
        block_time=int(datetime.now(UTC).timestamp()),
        token=coin,
        from_address="0x" + "2" * 40,
        to_address=to.lower(),
        amount=amount,
    )


async def outbox_events(pool: Pool, intent_id: int) -> list[dict[str, object]]:
    rows = await pool.fetch("SELECT payload FROM outbox WHERE key = $1 ORDER BY id", str(intent_id))
    return [orjson.loads(bytes(r["payload"])) for r in rows]


@hyp_settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.integers(1, 6_000_000), min_size=1, max_size=5), st.data())
async def test_any_order_and_duplication_credits_each_deposit_once(
    pool: Pool, settings: Settings, amounts: list[int], data: st.DataObject
) -> None:
    intent = await new_intent(pool, settings, amount="10")
    messages = [deposit(settings, intent.intent_address, a) for a in amounts]
    repeats = data.draw(st.lists(st.sampled_from(messages), max_size=5))
    order = data.draw(st.permutations(messages + repeats))
    outcomes = []
    async with pool.acquire() as conn:
        for message in order:
            outcomes.append(await apply_deposit(conn, settings, message, now=datetime.now(UTC)))
        row = await intent_store.get_by_id(conn, intent.id)
    assert row is not None
    assert outcomes.count(Outcome.DUPLICATE) == len(repeats)
    stored = await pool.fetch(
        "SELECT amount, disposition FROM deposits WHERE intent_id = $1", intent.id
    )
    assert len(stored) == len(messages)
    credited = sum(int(r["amount"]) for r in stored if r["disposition"] == "credited")
    owed = sum(int(r["amount"]) for r in stored if r["disposition"] == "refund_owed")
    kept = [int(r["amount"]) for r in stored if r["disposition"] == "retained"]
    assert credited + owed + sum(kept) == sum(amounts)  # nothing lost
    usdc = settings.chains[intent.source_chain].token(intent.token_in)
    assert usdc is not None
    assert all(amount < usdc.min_sweep_units for amount in kept)  # only dust is kept
    assert row.received == credited
    refunds = await pool.fetchval(
        "SELECT COALESCE(SUM(amount), 0) FROM actions"
        " WHERE intent_id = $1 AND kind = 'user_refund'",
        intent.id,
    )
    assert int(refunds) == owed
    assert (row.status is IntentStatus.FUNDED) == (credited >= 10_000_000)
    events = await outbox_events(pool, intent.id)
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert len(events) == sum(1 for r in stored if r["disposition"] == "credited")
    logged = await pool.fetch(
        "SELECT id, sequence, body::text FROM intent_events WHERE intent_id = $1 ORDER BY sequence",
        intent.id,
    )
    assert [orjson.loads(r["body"]) for r in logged] == events  # the event log, the same
    assert [(str(r["id"]), r["sequence"]) for r in logged] == [
        (e["id"], e["sequence"]) for e in events
    ]


async def test_two_writers_of_the_same_deposit_credit_it_once(
    pool: Pool, settings: Settings
) -> None:
    intent = await new_intent(pool, settings, amount="10")
    message = deposit(settings, intent.intent_address, 3_000_000)

    async def apply() -> Outcome:
        async with pool.acquire() as conn:
            return await apply_deposit(conn, settings, message, now=datetime.now(UTC))

    outcomes = await asyncio.gather(*(apply() for _ in range(4)))
    assert sorted(outcomes) == sorted([Outcome.CREDITED] + [Outcome.DUPLICATE] * 3)
    row = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
    assert row is not None and row.received == 3_000_000


async def test_classification_of_deposits(pool: Pool, settings: Settings) -> None:
    intent = await new_intent(pool, settings, amount="10")
    usdt = next(t.address for t in settings.chains[CHAIN].tokens if t.symbol == "USDT")
    arb_usdc = next(
        t.address for t in settings.chains["ARBITRUM_TESTNET"].tokens if t.symbol == "USDC"
    )
    now = datetime.now(UTC)
    worth = 100_000  # 0.1 of a stablecoin: the default min_sweep
    eth = 5 * 10**13  # 0.00005 ETH: the default min_sweep of a major token
    cases = [
        (deposit(settings, intent.intent_address, worth, token=usdt), Outcome.REFUND_OWED),
        (deposit(settings, intent.intent_address, 5, token="0x" + "9" * 40), Outcome.IGNORED),
        (
            deposit(
                settings, intent.intent_address, worth, token=arb_usdc, chain="ARBITRUM_TESTNET"
            ),
            Outcome.REFUND_OWED,
        ),
        (deposit(settings, intent.intent_address, eth, token=NATIVE_TOKEN), Outcome.REFUND_OWED),
        (deposit(settings, intent.intent_address, 10_000_000), Outcome.CREDITED),
        (deposit(settings, intent.intent_address, worth), Outcome.REFUND_OWED),  # late
        (deposit(settings, "0x" + "4" * 40, 1), Outcome.UNMATCHED),
        # below the token's min_sweep: retained, no refund
        (deposit(settings, intent.intent_address, worth - 1), Outcome.RETAINED),  # late
        (deposit(settings, intent.intent_address, 1, token=usdt), Outcome.RETAINED),
        (deposit(settings, intent.intent_address, eth - 1, token=NATIVE_TOKEN), Outcome.RETAINED),
    ]
    retained_before = _retained(CHAIN)
    async with pool.acquire() as conn:
        for message, expected in cases:
            assert await apply_deposit(conn, settings, message, now=now) is expected
    reasons = await pool.fetch(
        "SELECT reason, amount, to_address FROM actions"
        " WHERE intent_id = $1 AND kind = 'user_refund' ORDER BY id",
        intent.id,
    )
    assert [r["reason"] for r in reasons] == ["wrong_token"] * 3 + ["late_deposit"]
    assert {r["to_address"] for r in reasons} == {intent.refund_address}
    kept = await pool.fetch(
        "SELECT reason, amount FROM deposits WHERE intent_id = $1 AND disposition = 'retained'"
        " ORDER BY id",
        intent.id,
    )
    assert [(r["reason"], int(r["amount"])) for r in kept] == [
        ("late_deposit", worth - 1),
        ("wrong_token", 1),
        ("wrong_token", eth - 1),
    ]
    assert _retained(CHAIN) - retained_before == 3


def _retained(chain: str) -> float:
    total = 0.0
    for reason in ("late_deposit", "wrong_token"):
        value = REGISTRY.get_sample_value(
            "intentd_retained_total", {"chain": chain, "kind": "user_refund", "reason": reason}
        )
        total += value or 0.0
    return total


async def test_retraction_uncredits_before_initiation(pool: Pool, settings: Settings) -> None:
    intent = await new_intent(pool, settings, amount="10")
    message = deposit(settings, intent.intent_address, 10_000_000)
    async with pool.acquire() as conn:
        await apply_deposit(conn, settings, message, now=datetime.now(UTC))
        retraction = RetractionMessage(
            id=message.id,
            chain=message.chain,
            tx_hash=message.tx_hash,
            log_index=message.log_index,
            block_number=message.block_number,
            block_hash=message.block_hash,
            to_address=message.to_address,
        )
        now = datetime.now(UTC)
        assert await apply_retraction(conn, settings, retraction, now=now) is Outcome.RETRACTED
        assert (
            await apply_retraction(conn, settings, retraction, now=now) is Outcome.RETRACTION_NOOP
        )
        prefills = await conn.fetch(
            "SELECT status FROM actions WHERE intent_id = $1 AND kind = 'prefill'", intent.id
        )
        assert [r["status"] for r in prefills] == ["cancelled"]  # never signed, so undone
        row = await intent_store.get_by_id(conn, intent.id)
        assert row is not None
        assert (row.status, row.funding_status, row.received) == (
            IntentStatus.PENDING,
            FundingStatus.NONE,
            0,
        )
        # the same transfer mined again in the new canonical block is credited again
        again = message.model_copy(update={"block_hash": "0x" + "e" * 64})
        assert await apply_deposit(conn, settings, again, now=datetime.now(UTC)) is Outcome.CREDITED
        row = await intent_store.get_by_id(conn, intent.id)
        assert row is not None and row.status is IntentStatus.FUNDED


async def test_consumer_applies_topic_and_dead_letters_malformed(
    pool: Pool, isolated_settings: Settings
) -> None:
    """In-process consumer: events reach Kafka through the outbox; bad input goes to the DLQ."""
    settings = isolated_settings
    intent = await new_intent(pool, settings, amount="10")
    prefix = settings.kafka.topic_prefix
    topic = deposits_topic(prefix, CHAIN)
    good = deposit(settings, intent.intent_address, 10_000_000)
    await produce(
        settings.kafka.bootstrap_servers,
        topic,
        [
            (intent.intent_address, b"{not json"),
            (intent.intent_address, orjson.dumps({"kind": "deposit", "id": "x"})),
            (intent.intent_address, encode(good)),
        ],
    )
    publisher = KafkaPublisher(settings.kafka)
    await publisher.start()
    lifecycle = LifecycleConsumer(
        settings,
        PostgresStore(pool),
        KafkaDeadLetters(publisher),
        book=ChainBook.of_settings(settings),
    )
    from intentd.adapters.kafka import make_consumer

    consumer = make_consumer(settings.kafka, lifecycle.topics, group_id=f"g-{secrets.token_hex(4)}")
    await consumer.start()
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(
            lifecycle.run(KafkaInbox(consumer, stop, recover=unexpected_gap), stop)
        ),
        asyncio.create_task(OutboxRelay(pool, publisher).run(stop)),
    ]
    try:
        async with TopicReader(settings.kafka.bootstrap_servers, events_topic(prefix)) as events:
            found = await events.wait_for(
                lambda ms: any(e["intent"]["id"] == intent.id for e in json_values(ms))
            )
        event = next(e for e in json_values(found) if e["intent"]["id"] == intent.id)
        assert event["type"] == "intent_funded"
        assert event["intent"]["intent_status"] == "FUNDED"
        assert event["data"]["funding"] == {
            "status": "EXACT",
            "received": "10",
            "total": "10",
            "shortfall": "0",
            "excess": "0",
        }
        assert event["api_version"] == "v1" and event["sequence"] == 1
        async with TopicReader(settings.kafka.bootstrap_servers, dlq_topic(prefix)) as dlq:
            dead = await dlq.wait_for(lambda ms: len(ms) >= 2)
        reasons = [d["reason"] for d in json_values(dead)]
        assert all(r.startswith("malformed chain message") for r in reasons)
        assert json_values(dead)[0]["value"] == "{not json"
    finally:
        stop.set()
        await asyncio.gather(*tasks)
        await consumer.stop()
        await publisher.stop()


async def test_crash_after_db_commit_before_offset_commit_credits_once(
    pool: Pool, isolated_settings: Settings, tmp_path: Path
) -> None:
    """Kill the lifecycle between its database commit and its offset commit, restart it:
    the redelivered deposit is recognised, credited once, and one event goes out."""
    settings = isolated_settings
    group = f"crash-{secrets.token_hex(4)}"
    intent = await new_intent(pool, settings, amount="10")
    message = deposit(settings, intent.intent_address, 4_000_000)
    topic = deposits_topic(settings.kafka.topic_prefix, CHAIN)
    await produce(
        settings.kafka.bootstrap_servers, topic, [(intent.intent_address, encode(message))]
    )
    env = daemon_env(settings, INTENTD__KAFKA__LIFECYCLE_GROUP=group)
    log = tmp_path / "lifecycle.log"

    crashing = start_daemon(
        ["lifecycle"], {**env, "INTENTD_CRASH_AT": "lifecycle.after_db_commit"}, log
    )
    assert await wait_exit(crashing, 60) == CRASH_EXIT_CODE, log.read_text()
    row = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
    assert row is not None and row.received == 4_000_000  # the database commit happened

    restarted = start_daemon(["lifecycle"], env, log)
    try:
        async with TopicReader(
            settings.kafka.bootstrap_servers, events_topic(settings.kafka.topic_prefix)
        ) as events:
            await events.wait_for(
                lambda ms: any(e["intent"]["id"] == intent.id for e in json_values(ms))
            )
            await events.drain(2.0)
        mine = [e for e in json_values(events.messages) if e["intent"]["id"] == intent.id]
        deadline = asyncio.get_running_loop().time() + 20
        while "duplicate" not in log.read_text():
            assert asyncio.get_running_loop().time() < deadline, log.read_text()
            await asyncio.sleep(0.2)
    finally:
        restarted.terminate()
        assert await wait_exit(restarted, 30) == 0, log.read_text()
    row = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
    assert row is not None and row.received == 4_000_000 and row.event_sequence == 1
    assert len({e["id"] for e in mine}) == 1
    count = await pool.fetchval("SELECT count(*) FROM deposits WHERE intent_id = $1", intent.id)
    assert count == 1


async def test_a_commit_lost_to_a_rebalance_is_survived(settings: Settings) -> None:
    """Offsets for partitions this member no longer owns are not an error: the new owner
    replays the tail idempotently. The lifecycle must go on, not crash."""
    from aiokafka.structs import TopicPartition

    from intentd.adapters.kafka import commit_positions, fetch_batches, make_consumer

    topic = deposits_topic(settings.kafka.topic_prefix, CHAIN)
    consumer = make_consumer(settings.kafka, [topic], group_id=f"g-{secrets.token_hex(4)}")
    await consumer.start()
    try:
        while not consumer.assignment():
            await fetch_batches(consumer, timeout_ms=100, recover=unexpected_gap)
        owned = next(iter(consumer.assignment()))
        assert await commit_positions(consumer, {owned: 0})
        foreign = TopicPartition(dlq_topic(settings.kafka.topic_prefix), 0)
        assert not await commit_positions(consumer, {foreign: 1})
    finally:
        await consumer.stop()


async def test_our_own_gas_top_up_is_not_a_deposit(pool: Pool, settings: Settings) -> None:
    """The executor tops up intent addresses with native gas from the gas tank; the poller
    sees that transfer like any other. It must not be credited or refunded to the user."""
    intent = await new_intent(pool, settings, amount="10")
    top_up = deposit(settings, intent.intent_address, 10**15, token=NATIVE_TOKEN)
    action_id = await pool.fetchval(
        "INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address,"
        " status) VALUES ($1, 'user_refund', 99, $2, 'x', 1, 'x', 'submitted') RETURNING id",
        intent.id,
        CHAIN,
    )
    await pool.execute(
        "INSERT INTO chain_transactions (action_id, purpose, chain, signer, nonce, tx_hash,"
        " raw_tx, to_address, value, gas_limit, max_fee_per_gas, max_priority_fee_per_gas,"
        " status) VALUES ($1, 'gas_topup', $2, 'tank', 0, $3, '\\x00', $4, 1, 21000, 1, 1,"
        " 'sent')",
        action_id,
        CHAIN,
        top_up.tx_hash,
        intent.intent_address,
    )
    async with pool.acquire() as conn:
        assert await apply_deposit(conn, settings, top_up, now=datetime.now(UTC)) is (
            Outcome.INTERNAL
        )
    refunds = await pool.fetchval(
        "SELECT count(*) FROM actions WHERE intent_id = $1 AND kind = 'user_refund'"
        " AND status = 'ready'",
        intent.id,
    )
    assert refunds == 0
