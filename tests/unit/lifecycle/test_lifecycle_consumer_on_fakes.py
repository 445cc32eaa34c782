"""The lifecycle consumer over in-memory fakes: apply, dead-letter, retry, commit."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from tests.unit.lifecycle.lifecycle_builders import (
    DESTINATION,
    NOW,
    PAYER,
    SOURCE,
    USDC,
    intent_row,
    settings,
    tx,
)
from tests.unit.lifecycle.lifecycle_fakes import FakeStore, FakeUnitOfWork
from tests.unit.lifecycle.lifecycle_inbox_fakes import FakeInbox, FakePublisher, Record
from tests.unit.lifecycle.lifecycle_positions_fakes import FakePositions

from intentd.adapters.postgres.intent_store import ConcurrentUpdate
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.consumer import LifecycleConsumer
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.ports import ActionFacts
from intentd.messages import (
    ActionResultMessage,
    DepositMessage,
    action_results_topic,
    deposits_topic,
    dlq_topic,
    encode,
)

PREFIX = "unit"


def deposit_message(amount: int, *, n: int = 1, chain: str = SOURCE) -> DepositMessage:
    return DepositMessage(
        id=f"{chain}:{tx(n)}:{USDC}:0", chain=chain, chain_id=1, tx_hash=tx(n), log_index=0,
        transfer_index=0, block_number=n, block_hash=tx(10_000 + n),
        block_time=int(NOW.timestamp()), token=USDC, from_address=PAYER,
        to_address=intent_row(1).intent_address, amount=amount,
    )  # fmt: skip


def record(topic: str, value: bytes, offset: int = 0) -> Record:
    return Record(topic=topic, partition=0, offset=offset, key=b"k", value=value)


class Harness:
    def __init__(self, **options: Any) -> None:
        self.uow = FakeUnitOfWork()
        self.uow.add_intent(intent_row(1, total_due=1_000))
        self.store = FakeStore(self.uow)
        self.out = FakePublisher()
        self.consumer = LifecycleConsumer(
            settings(prefix=PREFIX),
            self.store,
            self.out,
            book=ChainBook.of_settings(settings(prefix=PREFIX)),
            retry_base=0.0001,
            **options,
        )

    async def handle(self, topic: str, value: bytes) -> Outcome | None:
        return await self.consumer.handle(record(topic, value))

    def dead(self) -> list[str]:
        assert all(m.topic == dlq_topic(PREFIX) for m in self.out.sent)
        return [orjson.loads(m.value)["reason"] for m in self.out.sent]


SOURCE_TOPIC = deposits_topic(PREFIX, SOURCE)


async def test_the_topics_are_every_chains_deposits_and_the_action_results() -> None:
    assert Harness().consumer.topics == [
        deposits_topic(PREFIX, SOURCE),
        deposits_topic(PREFIX, DESTINATION),
        action_results_topic(PREFIX),
    ]


async def test_a_deposit_message_is_credited_through_the_unit_of_work() -> None:
    harness = Harness()
    assert await harness.handle(SOURCE_TOPIC, encode(deposit_message(1_000))) is Outcome.CREDITED
    assert harness.uow.row(1).status is IntentStatus.FUNDED
    assert harness.out.sent == []


async def test_a_deposit_read_from_another_chains_topic_is_dead_lettered() -> None:
    harness = Harness()
    topic = deposits_topic(PREFIX, DESTINATION)
    assert await harness.handle(topic, encode(deposit_message(1_000))) is None
    [reason] = harness.dead()
    assert reason.startswith("chain_mismatch")
    assert harness.uow.state.deposits == {}


async def test_an_unparsable_message_is_dead_lettered() -> None:
    harness = Harness()
    assert await harness.handle(SOURCE_TOPIC, b"{not json") is None
    [reason] = harness.dead()
    assert reason.startswith("malformed")


async def test_a_deposit_that_contradicts_the_store_is_dead_lettered_at_once() -> None:
    harness = Harness()
    await harness.handle(SOURCE_TOPIC, encode(deposit_message(400)))
    other = deposit_message(400).model_copy(update={"amount": 900, "block_hash": tx(5)})
    assert await harness.handle(SOURCE_TOPIC, encode(other)) is None
    [reason] = harness.dead()
    assert reason.startswith("error:Unappliable")
    assert harness.uow.row(1).received == 400


def sent_prefill(action_id: int) -> ActionResultMessage:
    return ActionResultMessage(
        id=f"action:{action_id}:sent", action_id=action_id, intent_id=1, action_kind="prefill",
        event="sent", chain=DESTINATION, tx_hash=tx(77),
    )  # fmt: skip


async def test_an_action_result_the_executor_did_not_record_is_dead_lettered() -> None:
    harness = Harness()
    await harness.handle(SOURCE_TOPIC, encode(deposit_message(1_000)))
    [prefill] = harness.uow.actions_of(1)
    topic = action_results_topic(PREFIX)
    assert await harness.handle(topic, encode(sent_prefill(prefill.id))) is None
    [reason] = harness.dead()
    assert reason.startswith("result_mismatch")
    assert harness.uow.row(1).status is IntentStatus.FUNDED


async def test_an_action_result_that_agrees_with_the_record_is_applied() -> None:
    harness = Harness()
    await harness.handle(SOURCE_TOPIC, encode(deposit_message(1_000)))
    [prefill] = harness.uow.actions_of(1)
    harness.uow.state.facts[prefill.id] = ActionFacts(
        intent_id=1, kind="prefill", chain=DESTINATION, status="sent", tx_hash=None,
        amount_sent=None, gas_cost=None, transfer_sent=True,
    )  # fmt: skip
    topic = action_results_topic(PREFIX)
    assert await harness.handle(topic, encode(sent_prefill(prefill.id))) is Outcome.APPLIED
    assert harness.uow.row(1).status is IntentStatus.INITIATED


async def test_a_transaction_lost_to_another_is_retried_then_applied() -> None:
    harness = Harness()
    harness.uow.fail_next = ConcurrentUpdate("lost")
    assert await harness.handle(SOURCE_TOPIC, encode(deposit_message(1_000))) is Outcome.CREDITED
    assert harness.out.sent == []


async def test_while_the_database_is_down_the_message_waits_for_it() -> None:
    """Lost connections past the retries, and the database does not answer: the
    consumer waits for it (no dead letter), then applies the message."""
    harness = Harness()
    harness.store.unanswered = 3
    attempts = 0
    real = harness.uow.transaction

    def flaky() -> Any:
        nonlocal attempts
        attempts += 1
        if attempts <= 8:
            raise ConnectionResetError("gone")
        return real()

    harness.uow.transaction = flaky  # type: ignore[method-assign]
    assert await harness.handle(SOURCE_TOPIC, encode(deposit_message(1_000))) is Outcome.CREDITED
    assert harness.out.sent == [] and attempts == 9
    assert harness.store.pings == 4  # three unanswered, then it answers


async def test_an_action_result_failing_for_want_of_a_connection_is_never_dead_lettered() -> None:
    """The database answers the consumer's ``SELECT 1`` (it came back between two of the
    message's attempts, or it refuses only some connections), yet applying an action
    result keeps failing for want of a connection past the retries: dead-lettering it
    would leave its intent stuck (a refund confirmed on chain, no ``intent_refunded``).
    It is tried again until it applies."""
    harness = Harness()
    await harness.handle(SOURCE_TOPIC, encode(deposit_message(1_000)))
    [prefill] = harness.uow.actions_of(1)
    harness.uow.state.facts[prefill.id] = ActionFacts(
        intent_id=1, kind="prefill", chain=DESTINATION, status="sent", tx_hash=None,
        amount_sent=None, gas_cost=None, transfer_sent=True,
    )  # fmt: skip
    attempts = 0
    real = harness.uow.transaction

    def flaky() -> Any:
        nonlocal attempts
        attempts += 1
        if attempts <= 20:  # more than the retries of two rounds
            raise ConnectionResetError("connection reset by peer")
        return real()

    harness.uow.transaction = flaky  # type: ignore[method-assign]
    topic = action_results_topic(PREFIX)
    outcome = await asyncio.wait_for(harness.handle(topic, encode(sent_prefill(prefill.id))), 10)
    assert harness.dead() == []
    assert outcome is Outcome.APPLIED and attempts == 21
    assert harness.uow.row(1).status is IntentStatus.INITIATED


async def test_stopping_while_the_database_is_down_settles_nothing() -> None:
    harness = Harness()
    harness.store.unanswered = 10**6
    stop = asyncio.Event()

    def gone() -> Any:
        raise ConnectionResetError("gone")

    harness.uow.transaction = gone  # type: ignore[method-assign]
    inbox = FakeInbox([{"p0": [record(SOURCE_TOPIC, encode(deposit_message(1_000)))]}], stop)
    await asyncio.wait_for(harness.consumer.run(inbox, stop), 5)  # the inbox sets stop
    assert inbox.committed == {} and harness.out.sent == []


async def test_the_loop_commits_each_partition_after_its_messages_are_settled() -> None:
    harness = Harness()
    stop = asyncio.Event()
    first = [
        record(SOURCE_TOPIC, encode(deposit_message(400, n=1)), 0),
        record(SOURCE_TOPIC, b"junk", 1),
        record(SOURCE_TOPIC, encode(deposit_message(600, n=2)), 2),
    ]
    inbox = FakeInbox([{"p0": first}], stop)
    await asyncio.wait_for(harness.consumer.run(inbox, stop), 5)
    assert inbox.committed == {"p0": 3}
    assert harness.uow.row(1).received == 1_000
    assert len(harness.dead()) == 1


async def test_the_block_of_the_last_applied_chain_message_is_recorded_before_the_commit() -> None:
    """What bounds the rescan if retention deletes the partition's next records unread."""
    positions = FakePositions()
    harness = Harness(positions=positions)
    stop = asyncio.Event()
    batch = [
        record(SOURCE_TOPIC, encode(deposit_message(400, n=7)), 0),
        record(SOURCE_TOPIC, encode(deposit_message(600, n=9)), 1),
        record(SOURCE_TOPIC, b"junk", 2),  # dead-lettered: no block
    ]
    inbox = FakeInbox([{"p0": batch}], stop)
    commit = inbox.commit

    async def commit_after_the_record(positions_: Any) -> None:
        positions.calls.append("commit")
        await commit(positions_)

    inbox.commit = commit_after_the_record  # type: ignore[method-assign]
    await asyncio.wait_for(harness.consumer.run(inbox, stop), 5)
    assert positions.calls == [f"record {SOURCE_TOPIC}:0@9", "commit"]
    assert inbox.committed == {"p0": 3}


class FlakyPositions(FakePositions):
    """Whose ``record_applied_block`` raises ``errors`` (one a call) before it records."""

    def __init__(self, *errors: Exception) -> None:
        super().__init__()
        self.errors = list(errors)

    async def record_applied_block(self, topic: str, partition: int, block_number: int) -> None:
        if self.errors:
            raise self.errors.pop(0)
        await super().record_applied_block(topic, partition, block_number)


async def test_a_transient_error_recording_the_applied_block_is_retried_not_fatal() -> None:
    positions = FlakyPositions(ConnectionResetError("reset"), ConcurrentUpdate("lost"))
    harness = Harness(positions=positions)
    stop = asyncio.Event()
    inbox = FakeInbox([{"p0": [record(SOURCE_TOPIC, encode(deposit_message(400, n=7)), 0)]}], stop)
    await asyncio.wait_for(harness.consumer.run(inbox, stop), 5)
    assert positions.applied == {(SOURCE_TOPIC, 0): 7}
    assert inbox.committed == {"p0": 1}


async def test_stopping_while_the_database_is_down_at_the_record_commits_nothing() -> None:
    """The applied block is never skipped: while the database is down the consumer waits
    for it, and a stop then ends the run cleanly without committing the batch."""
    positions = FlakyPositions(*[ConnectionResetError("reset")] * 100)
    harness = Harness(positions=positions)
    harness.store.unanswered = 1_000
    stop = asyncio.Event()
    inbox = FakeInbox([{"p0": [record(SOURCE_TOPIC, encode(deposit_message(400, n=7)), 0)]}], stop)
    await asyncio.wait_for(harness.consumer.run(inbox, stop), 5)
    assert inbox.committed == {}
    assert positions.applied == {}
