"""A message never stops the lifecycle: whatever one message does, it is applied or goes
to the dead-letter topic with its reason, and the consumer goes on with the next one."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from aiokafka.structs import ConsumerRecord
from prometheus_client import REGISTRY
from tests.integration.test_lifecycle import CHAIN, deposit
from tests.lifecycle_calls import Outcome, apply_deposit
from tests.support import TopicReader, json_values, new_intent, produce, unexpected_gap

from intentd.adapters.kafka import KafkaPublisher, make_consumer
from intentd.adapters.kafka.lifecycle_inbox import KafkaDeadLetters, KafkaInbox
from intentd.adapters.postgres import Pool, intent_store
from intentd.adapters.postgres.lifecycle_uow import PostgresStore
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.consumer import LifecycleConsumer
from intentd.lifecycle.ports import UnitOfWork
from intentd.messages import (
    ActionResultMessage,
    DepositMessage,
    OutgoingMessage,
    RetractionMessage,
    action_result_id,
    action_results_topic,
    deposits_topic,
    dlq_topic,
    encode,
)
from intentd.settings import Settings

pytestmark = pytest.mark.integration


def dead_letters(reason: str) -> float:
    """``intentd_dead_letters_total`` of ``reason``, summed over topics."""
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "intentd_dead_letters"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels.get("reason") == reason
    )


async def sent_prefill_of_a_removed_chain(pool: Pool, settings: Settings) -> ActionResultMessage:
    """The genuine ``sent`` result of a FUNDED intent's prefill, the intent's destination
    chain no longer configured: applying it raises KeyError (``settings.chains[...]``)
    in today's handler."""
    intent = await new_intent(pool, settings, amount="10")
    async with pool.acquire() as conn:
        full = deposit(settings, intent.intent_address, 10_000_000)
        await apply_deposit(conn, settings, full, now=datetime.now(UTC))
        await conn.execute(
            "UPDATE intents SET destination_chain = 'REMOVED_CHAIN' WHERE id = $1", intent.id
        )
        row = await intent_store.get_by_id(conn, intent.id)
    assert row is not None and row.status is IntentStatus.FUNDED
    action = await pool.fetchrow(
        "SELECT id, chain FROM actions WHERE intent_id = $1 AND kind = 'prefill'", intent.id
    )
    assert action is not None
    tx = "0x" + secrets.token_hex(32)
    await record_sent_transfer(pool, action["id"], action["chain"], tx)
    return ActionResultMessage(
        id=action_result_id(action["id"], "sent"), action_id=action["id"], intent_id=intent.id,
        action_kind="prefill", event="sent", chain=action["chain"], tx_hash=tx,
    )  # fmt: skip


async def record_sent_transfer(pool: Pool, action_id: int, chain: str, tx: str) -> None:
    """What the executor records when it sends an action's transfer."""
    await pool.execute(
        "INSERT INTO chain_transactions (action_id, purpose, chain, signer, nonce, tx_hash,"
        " raw_tx, to_address, value, gas_limit, max_fee_per_gas, max_priority_fee_per_gas,"
        " status, sent_at) VALUES ($1, 'transfer', $2, 'relayer', 0, $3, '\\x00', 'x', 0,"
        " 21000, 1, 1, 'sent', now())",
        action_id,
        chain,
        tx,
    )


async def test_poison_messages_go_to_the_dlq_and_the_next_one_is_applied(
    pool: Pool, isolated_settings: Settings
) -> None:
    settings = isolated_settings
    prefix = settings.kafka.topic_prefix
    topic = deposits_topic(prefix, CHAIN)
    intent = await new_intent(pool, settings, amount="10")
    victim = await new_intent(pool, settings, amount="10")
    other = "ARBITRUM_TESTNET"
    foreign_chain = deposit(settings, victim.intent_address, 10_000_000, chain=other)
    wrong_chain_id = deposit(settings, victim.intent_address, 10_000_000).model_copy(
        update={"chain_id": 1}
    )
    unknown_chain = deposit(settings, victim.intent_address, 10_000_000).model_copy(
        update={"chain": "NOWHERE"}
    )
    retraction_elsewhere = RetractionMessage(
        id="x", chain=other, tx_hash="0x" + "1" * 64, log_index=0, block_number=1,
        block_hash="0x" + "2" * 64, to_address=victim.intent_address,
    )  # fmt: skip
    key_error = await sent_prefill_of_a_removed_chain(pool, settings)
    good = deposit(settings, intent.intent_address, 4_000_000)
    before = {r: dead_letters(r) for r in ("chain_mismatch", "error:KeyError")}
    # One key: one partition, in this order; the good deposit comes last.
    await produce(
        settings.kafka.bootstrap_servers,
        topic,
        [
            (victim.intent_address, encode(m))
            for m in (foreign_chain, wrong_chain_id, unknown_chain, retraction_elsewhere)
        ]
        + [(victim.intent_address, encode(good))],
    )
    await produce(
        settings.kafka.bootstrap_servers,
        action_results_topic(prefix),
        [(str(key_error.intent_id), encode(key_error))],
    )
    publisher = KafkaPublisher(settings.kafka)
    await publisher.start()
    lifecycle = LifecycleConsumer(
        settings,
        PostgresStore(pool),
        KafkaDeadLetters(publisher),
        book=ChainBook.of_settings(settings),
    )
    consumer = make_consumer(settings.kafka, lifecycle.topics, group_id=f"g-{secrets.token_hex(4)}")
    await consumer.start()
    stop = asyncio.Event()
    task = asyncio.create_task(
        lifecycle.run(KafkaInbox(consumer, stop, recover=unexpected_gap), stop)
    )
    try:
        deadline = time.monotonic() + 30
        while (row := await intent_store.get_by_id(pool, intent.id)) is None or row.received == 0:  # type: ignore[arg-type]
            assert not task.done(), task.exception()  # the consumer crashed
            assert time.monotonic() < deadline, "the good deposit was never applied"
            await asyncio.sleep(0.1)
        async with TopicReader(settings.kafka.bootstrap_servers, dlq_topic(prefix)) as dlq:
            dead = json_values(await dlq.wait_for(lambda ms: len(ms) >= 5))
        assert not task.done()
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)
        committed = {tp: await consumer.committed(tp) for tp in consumer.assignment()}
        positions = {tp: await consumer.position(tp) for tp in consumer.assignment()}
        await consumer.stop()
        await publisher.stop()
    assert row.received == 4_000_000
    victim_row = await intent_store.get_by_id(pool, victim.id)  # type: ignore[arg-type]
    assert victim_row is not None and victim_row.received == 0  # nothing foreign was credited
    reasons = sorted(d["reason"] for d in dead)
    assert sum(r.startswith("chain_mismatch:") for r in reasons) == 4, reasons
    [keyerror] = [d for d in dead if d["reason"].startswith("error:KeyError")]
    assert "REMOVED_CHAIN" in keyerror["reason"]
    assert keyerror["topic"] == action_results_topic(prefix)
    assert dead_letters("chain_mismatch") - before["chain_mismatch"] >= 4
    assert dead_letters("error:KeyError") - before["error:KeyError"] >= 1
    used = {tp: position for tp, position in positions.items() if position}
    assert len(used) == 2  # the deposits' partition and the action results'
    # every message, dead-lettered or applied, is behind the committed offsets
    assert {tp: committed[tp] for tp in used} == used


class _Flaky(LifecycleConsumer):
    """Fails the first ``failures`` applications with ``error``."""

    def __init__(
        self, settings: Settings, *args: Any, error: Callable[[], Exception], failures: int
    ) -> None:
        super().__init__(settings, *args, book=ChainBook.of_settings(settings), retry_base=0.001)
        self._error = error
        self.failures = failures
        self.attempts = 0

    async def _apply(
        self, uow: UnitOfWork, message: DepositMessage | RetractionMessage | ActionResultMessage
    ) -> Outcome:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise self._error()
        return await super()._apply(uow, message)


class _Capture:
    def __init__(self) -> None:
        self.sent: list[OutgoingMessage] = []

    async def publish(self, message: OutgoingMessage) -> None:
        self.sent.append(message)


def record_of(settings: Settings, message: DepositMessage) -> ConsumerRecord[bytes, bytes]:
    value = encode(message)
    return ConsumerRecord(
        topic=deposits_topic(settings.kafka.topic_prefix, message.chain), partition=0, offset=7,
        timestamp=0, timestamp_type=0, key=message.to_address.encode(), value=value,
        checksum=None, serialized_key_size=42, serialized_value_size=len(value), headers=[],
    )  # fmt: skip


async def test_a_transient_error_is_retried_then_applied(pool: Pool, settings: Settings) -> None:
    intent = await new_intent(pool, settings, amount="10")
    message = deposit(settings, intent.intent_address, 1_000_000)
    out = _Capture()
    flaky = _Flaky(
        settings, PostgresStore(pool), out,
        error=lambda: asyncpg.SerializationError("could not serialize"),
        failures=3,
    )  # fmt: skip
    assert await flaky.handle(record_of(settings, message)) is Outcome.CREDITED
    assert flaky.attempts == 4 and out.sent == []


async def test_a_transient_error_that_persists_goes_to_the_dlq(
    pool: Pool, settings: Settings
) -> None:
    intent = await new_intent(pool, settings, amount="10")
    message = deposit(settings, intent.intent_address, 1_000_000)
    out = _Capture()
    flaky = _Flaky(
        settings, PostgresStore(pool), out,
        error=lambda: asyncpg.DeadlockDetectedError("deadlock detected"),
        failures=10**6,
    )  # fmt: skip
    assert await flaky.handle(record_of(settings, message)) is None
    [dead] = out.sent
    assert dead.topic == dlq_topic(settings.kafka.topic_prefix)
    assert dict(dead.headers)["reason"].startswith(b"transient:DeadlockDetectedError")
    assert flaky.attempts == 8
    row = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
    assert row is not None and row.received == 0


async def test_while_the_database_is_down_messages_wait_instead_of_dead_lettering(
    pool: Pool, settings: Settings
) -> None:
    """A lost connection that persists while the database does not answer is an outage,
    not a bad message: the consumer waits for the database and then applies it."""
    intent = await new_intent(pool, settings, amount="10")
    message = deposit(settings, intent.intent_address, 1_000_000)
    out = _Capture()
    flaky = _Flaky(
        settings, PostgresStore(pool), out,
        error=lambda: asyncpg.ConnectionDoesNotExistError("connection was closed"),
        failures=12,
    )  # fmt: skip
    probes = iter([False, False, True])

    async def database_answers() -> bool:
        return next(probes, True)

    flaky._database_answers = database_answers  # type: ignore[method-assign]
    assert await flaky.handle(record_of(settings, message)) is Outcome.CREDITED
    assert out.sent == [] and flaky.attempts == 13


async def test_an_intent_that_cannot_expire_does_not_stop_the_others(
    own_stack: tuple[Settings, Pool], monkeypatch: pytest.MonkeyPatch
) -> None:
    from intentd.lifecycle import expiry

    settings, pool = own_stack
    broken, fine = (await new_intent(pool, settings), await new_intent(pool, settings))
    await pool.execute("UPDATE intents SET expires_at = now() - interval '1 hour'")  # past grace
    real = expiry.expire
    calls: list[int] = []

    async def expire(uow: UnitOfWork, book: ChainBook, intent_id: int, **kw: Any) -> Outcome:
        calls.append(intent_id)
        if intent_id == broken.id:
            raise KeyError("REMOVED_CHAIN")
        return await real(uow, book, intent_id, **kw)

    monkeypatch.setattr(expiry, "expire", expire)
    loop = expiry.Expiry(
        settings, PostgresStore(pool), book=ChainBook.of_settings(settings), max_sleep=0.05
    )
    rounds = 0
    expire_due = loop.expire_due

    async def counted() -> int:
        nonlocal rounds
        rounds += 1
        return await expire_due()

    loop.expire_due = counted  # type: ignore[method-assign]
    stop = asyncio.Event()
    task = asyncio.create_task(loop.run(stop))
    deadline = time.monotonic() + 10
    while (row := await intent_store.get_by_id(pool, fine.id)) is None or (  # type: ignore[arg-type]
        row.status is not IntentStatus.EXPIRED
    ):
        assert not task.done(), task.exception()
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    more = rounds + 5
    while rounds < more:  # a few more rounds (counted, not a fixed 0.3 s)
        assert not task.done(), task.exception()
        assert time.monotonic() < deadline + 10, f"{rounds} rounds"
        await asyncio.sleep(0.05)
    assert not task.done()
    stop.set()
    await asyncio.wait_for(task, 5)
    assert calls.count(broken.id) == 1  # not hammered every round
    row = await intent_store.get_by_id(pool, broken.id)  # type: ignore[arg-type]
    assert row is not None and row.status is IntentStatus.PENDING


async def prefill_of(pool: Pool, settings: Settings) -> tuple[int, dict[str, Any]]:
    """A FUNDED intent and its prefill action (ready, nothing sent)."""
    intent = await new_intent(pool, settings, amount="10")
    async with pool.acquire() as conn:
        full = deposit(settings, intent.intent_address, 10_000_000)
        await apply_deposit(conn, settings, full, now=datetime.now(UTC))
    action = await pool.fetchrow(
        "SELECT id, kind, chain FROM actions WHERE intent_id = $1 AND kind = 'prefill'", intent.id
    )
    assert action is not None
    return intent.id, dict(action)


def result_record(settings: Settings, message: ActionResultMessage) -> ConsumerRecord[bytes, bytes]:
    value = encode(message)
    return ConsumerRecord(
        topic=action_results_topic(settings.kafka.topic_prefix), partition=0, offset=3,
        timestamp=0, timestamp_type=0, key=str(message.intent_id).encode(), value=value,
        checksum=None, serialized_key_size=1, serialized_value_size=len(value), headers=[],
    )  # fmt: skip


async def test_action_results_are_checked_against_what_the_executor_recorded(
    pool: Pool, settings: Settings
) -> None:
    """Anyone who can write to the action-results topic could otherwise complete an
    intent whose prefill never went out (the relayer refund then pays out the deposit),
    or fail one whose prefill did (the user is refunded on top of the prefill)."""
    intent_id, prefill = await prefill_of(pool, settings)
    other_id, _ = await prefill_of(pool, settings)
    out = _Capture()
    lifecycle = LifecycleConsumer(
        settings, PostgresStore(pool), out, book=ChainBook.of_settings(settings)
    )
    tx = "0x" + secrets.token_hex(32)

    def result(event: str, **fields: Any) -> ActionResultMessage:
        values: dict[str, Any] = {
            "id": action_result_id(prefill["id"], event), "action_id": prefill["id"],
            "intent_id": intent_id, "action_kind": "prefill", "event": event,
            "chain": prefill["chain"], **fields,
        }  # fmt: skip
        return ActionResultMessage(**values)

    forged = [
        result("confirmed", tx_hash=tx, block_number=5, amount_sent=1, gas_cost=1),
        result("sent", tx_hash=tx),  # no such transaction of that action
        result("failed", error="made up"),  # the action has not failed
        result("sent", tx_hash=tx).model_copy(update={"intent_id": other_id}),
        result("sent", tx_hash=tx).model_copy(update={"action_kind": "user_refund"}),
        result("sent", tx_hash=tx).model_copy(update={"action_id": 10**9}),
    ]
    for message in forged:
        assert await lifecycle.handle(result_record(settings, message)) is None, message
    reasons = [dict(m.headers)["reason"].decode() for m in out.sent]
    assert len(reasons) == len(forged)
    assert all(r.startswith("result_mismatch: ") for r in reasons), reasons
    row = await intent_store.get_by_id(pool, intent_id)  # type: ignore[arg-type]
    assert row is not None and row.status is IntentStatus.FUNDED

    # The genuine result, once the executor recorded and sent its transaction, applies.
    await record_sent_transfer(pool, prefill["id"], prefill["chain"], tx)
    genuine = result("sent", tx_hash=tx)
    assert await lifecycle.handle(result_record(settings, genuine)) is Outcome.APPLIED
    row = await intent_store.get_by_id(pool, intent_id)  # type: ignore[arg-type]
    assert row is not None and row.status is IntentStatus.INITIATED
