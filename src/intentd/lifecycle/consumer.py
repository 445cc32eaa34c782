"""The lifecycle role: consume chain messages and action results, apply them, expire
intents on time, relay the outbox.

Delivery contract (DESIGN.md §3): auto-commit is off; a partition's offset is
committed only after every message up to it was applied in a committed database
transaction (or sent to the dead-letter topic). A crash anywhere replays at most
the uncommitted tail, which the handlers apply idempotently. A message that cannot
be parsed goes to ``<prefix>.dlq`` with its reason and origin; processing goes on.
Transient database errors are retried with backoff; a persistent one stops the
role (the supervisor restarts the process, which resumes from the last commit).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import asyncpg
import orjson
import structlog
from aiokafka import AIOKafkaConsumer
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from intentd import observability as metrics
from intentd.adapters.intent_store import ConcurrentUpdate, Connection
from intentd.adapters.kafka import (
    ConsumerRecord,
    KafkaPublisher,
    OutgoingMessage,
    TopicPartition,
    commit_positions,
    make_consumer,
)
from intentd.adapters.outbox import OutboxRelay
from intentd.adapters.postgres import Pool, create_pool
from intentd.domain.status import IllegalTransition
from intentd.faults import crash_point
from intentd.lifecycle.expiry import Expiry
from intentd.lifecycle.handlers import (
    Outcome,
    Unappliable,
    apply_action_result,
    apply_deposit,
    apply_retraction,
)
from intentd.lifecycle.holds import HoldWatch
from intentd.messages import (
    ActionResultMessage,
    DepositMessage,
    RetractionMessage,
    action_results_topic,
    decode_action_result,
    decode_chain_message,
    deposits_topic,
    dlq_topic,
)
from intentd.runtime import READINESS, Role
from intentd.settings import Settings

log = structlog.get_logger()
_TRANSIENT = (
    asyncpg.PostgresConnectionError,
    asyncpg.TooManyConnectionsError,
    OSError,
    ConcurrentUpdate,
    asyncpg.SerializationError,
    asyncpg.DeadlockDetectedError,
)


class LifecycleConsumer:
    """Applies the deposit topics of every configured chain to the store."""

    def __init__(self, settings: Settings, pool: Pool, publisher: KafkaPublisher) -> None:
        self._settings = settings
        self._pool = pool
        self._publisher = publisher
        prefix = settings.kafka.topic_prefix
        self._results = action_results_topic(prefix)
        self.topics = [deposits_topic(prefix, chain) for chain in settings.chains]
        self.topics.append(self._results)
        self._dlq = dlq_topic(prefix)

    async def run(self, consumer: AIOKafkaConsumer, stop: asyncio.Event) -> None:
        """Consume until ``stop``; the batch in hand is finished and committed first."""
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=200)
            for tp, records in batches.items():
                for record in records:
                    await self.handle(record)
                crash_point("lifecycle.after_db_commit")
                await commit_positions(consumer, {tp: records[-1].offset + 1})

    async def handle(self, record: ConsumerRecord[bytes, bytes]) -> Outcome | None:
        """Apply one record; None if it went to the dead-letter topic."""
        message: DepositMessage | RetractionMessage | ActionResultMessage
        try:
            if record.topic == self._results:
                message = decode_action_result(record.value or b"")
            else:
                message = decode_chain_message(record.value or b"")
        except ValueError as exc:
            await self._dead_letter(record, str(exc))
            return None
        started = time.perf_counter()
        try:
            outcome = await self._apply_with_retries(message)
        except (Unappliable, IllegalTransition, ValueError) as exc:  # contradicts the store
            await self._dead_letter(record, f"cannot apply {message.id}: {exc}")
            return None
        metrics.HANDLE_SECONDS.labels(message.kind).observe(time.perf_counter() - started)
        metrics.MESSAGES.labels(message.kind, outcome.value).inc()
        log.debug(
            "message applied", message_id=message.id, kind=message.kind, outcome=outcome.value
        )
        return outcome

    async def _apply_with_retries(
        self, message: DepositMessage | RetractionMessage | ActionResultMessage
    ) -> Outcome:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(_TRANSIENT),
            wait=wait_exponential_jitter(multiplier=0.05, max=5),
            stop=stop_after_attempt(8),
            reraise=True,
        ):
            with attempt:
                async with self._pool.acquire() as conn:
                    return await self._apply(conn, message)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def _apply(
        self,
        conn: Connection,
        message: DepositMessage | RetractionMessage | ActionResultMessage,
    ) -> Outcome:
        now = datetime.now(UTC)
        if isinstance(message, DepositMessage):
            return await apply_deposit(conn, self._settings, message, now=now)
        if isinstance(message, RetractionMessage):
            return await apply_retraction(conn, self._settings, message, now=now)
        return await apply_action_result(conn, self._settings, message, now=now)

    async def _dead_letter(self, record: ConsumerRecord[bytes, bytes], reason: str) -> None:
        body = {
            "reason": reason,
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "key": (record.key or b"").decode("utf-8", "replace"),
            "value": (record.value or b"").decode("utf-8", "replace"),
        }
        await self._publisher.publish(
            OutgoingMessage(
                self._dlq,
                key=(record.key or b"").decode("utf-8", "replace"),
                value=orjson.dumps(body),
                headers=(("reason", reason[:500].encode()),),
            )
        )
        metrics.DEAD_LETTERS.labels(record.topic).inc()
        log.warning(
            "message sent to dead-letter topic",
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            reason=reason,
        )


def lifecycle_role(settings: Settings) -> Role:
    """The lifecycle consumer and the outbox relay, with their own pool and producer."""

    async def role(stop: asyncio.Event) -> None:
        READINESS.expect("lifecycle")
        pool = await create_pool(
            settings.database.url.get_secret_value(),
            min_size=settings.database.min_pool,
            max_size=settings.database.max_pool,
        )
        publisher = KafkaPublisher(settings.kafka, client_suffix="-lifecycle")
        lifecycle = LifecycleConsumer(settings, pool, publisher)
        consumer = make_consumer(
            settings.kafka, lifecycle.topics, group_id=settings.kafka.lifecycle_group
        )
        try:
            await publisher.start()
            await consumer.start()
            READINESS.ready("lifecycle")
            log.info("lifecycle started", topics=lifecycle.topics)
            async with asyncio.TaskGroup() as group:
                group.create_task(OutboxRelay(pool, publisher).run(stop))
                group.create_task(lifecycle.run(consumer, stop))
                group.create_task(Expiry(settings, pool).run(stop))
                group.create_task(HoldWatch(pool).run(stop))
        finally:
            await consumer.stop()
            await publisher.stop()
            await pool.close()
            log.info("lifecycle stopped")

    return role


__all__ = ["LifecycleConsumer", "TopicPartition", "lifecycle_role"]
