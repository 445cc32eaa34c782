"""Kafka through aiokafka, with the delivery settings of DESIGN.md §3.

- :class:`KafkaPublisher`: ``acks=all``, every send awaited, flushed on stop; idempotent
  unless ``kafka.idempotent_producer`` is false (a broker without InitProducerId v0: a
  retried send may then be written twice, which consumers already dedupe by message id).
  A send that returns has been acknowledged by all in-sync replicas.
- :func:`make_consumer`: auto-commit off, the group's session timeout and heartbeat
  from ``kafka``; the caller commits ``offset + 1`` itself after its database commit
  (:func:`commit_positions`). Every rebalance is logged: ``kafka partitions revoked`` /
  ``kafka partitions assigned``. It never resets its position by itself
  (``auto_offset_reset="none"``): read it with :func:`fetch_batches`. For a committed
  position the log no longer holds (retention deleted records the group had not read)
  it logs ``kafka position outside the log`` at error (topic, partition, position, log
  start), counts ``intentd_kafka_offset_out_of_range_total{topic,partition}``; for a
  partition with no committed position (a new group, or one whose offsets expired) it
  asks the same recovery, with an ``uncommitted`` gap. Either way it awaits the
  caller's recovery, then reads on from the log start and commits that position (the
  first record still held), so a rejoin does not find the gap again.

This module and its siblings in ``adapters`` are the only code that imports aiokafka.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol

import structlog
from aiokafka import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    ConsumerRecord,
    TopicPartition,
)
from aiokafka.errors import (
    CommitFailedError,
    IllegalStateError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    RebalanceInProgressError,
)

from intentd import observability as metrics
from intentd.lifecycle.log_gaps import LogGap, gap_of
from intentd.messages import OutgoingMessage
from intentd.settings import KafkaConfig

log = structlog.get_logger()

__all__ = [
    "ConsumerRecord",
    "GapRecovery",
    "KafkaPublisher",
    "OutgoingMessage",  # intentd.messages' record, named here too for the adapters and tests
    "Record",
    "TopicPartition",
    "commit_positions",
    "fetch_batches",
    "make_consumer",
]

GapRecovery = Callable[[LogGap], Awaitable[None]]
"""Recovers what a gap skipped, durably, before it returns; raises if it cannot (the
position is then kept and the gap found again at the next read)."""


class Record(Protocol):
    """What the publisher sends: any record with these fields (``messages.OutgoingMessage``
    and each role's own message type alike)."""

    @property
    def topic(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> bytes: ...
    @property
    def headers(self) -> tuple[tuple[str, bytes], ...]: ...


class KafkaPublisher:
    """A producer (idempotent by default) whose sends are acknowledged before they return."""

    def __init__(self, config: KafkaConfig, *, client_suffix: str = "") -> None:
        self._config = config
        self._client_id = f"{config.client_id}{client_suffix}"
        self._producer = self._new_producer()
        self._started = False

    def _new_producer(self) -> AIOKafkaProducer:
        return AIOKafkaProducer(
            bootstrap_servers=self._config.bootstrap_servers,
            client_id=self._client_id,
            enable_idempotence=self._config.idempotent_producer,
            acks="all",
            linger_ms=0,
            request_timeout_ms=30_000,
        )

    async def start(self) -> None:
        """Connect; may be called again after it failed (no broker reachable yet)."""
        try:
            await self._producer.start()
        except BaseException:
            failed, self._producer = self._producer, self._new_producer()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(failed.stop(), 3.0)
            raise
        self._started = True

    async def stop(self) -> None:
        """Flush what is in flight and close; safe to call twice."""
        if self._started:
            self._started = False
            await self._producer.flush()
            await self._producer.stop()

    async def publish(self, message: Record) -> None:
        """Send one message and wait for its acknowledgement."""
        await self._producer.send_and_wait(
            message.topic,
            message.value,
            key=message.key.encode(),
            headers=list(message.headers) or None,
        )

    async def publish_all(self, messages: Iterable[Record]) -> int:
        """Send messages in order and wait until every one is acknowledged.

        Order per partition is kept by the producer (one batch in flight per partition
        without idempotence). Raises on the first
        failure; messages before it may or may not have been written (the caller
        retries the batch and consumers dedupe by message id).
        """
        futures = [
            await self._producer.send(
                m.topic, m.value, key=m.key.encode(), headers=list(m.headers) or None
            )
            for m in messages
        ]
        if futures:
            await asyncio.gather(*futures)
        return len(futures)


def make_consumer(
    config: KafkaConfig,
    topics: Sequence[str],
    *,
    group_id: str,
    max_poll_records: int = 500,
    fetch_max_wait_ms: int = 50,
) -> AIOKafkaConsumer:
    """A group consumer with auto-commit off that never resets its position by itself;
    the caller starts it, reads it with :func:`fetch_batches`, commits and stops it."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=config.bootstrap_servers,
        client_id=f"{config.client_id}-{group_id}",
        group_id=group_id,
        enable_auto_commit=False,
        auto_offset_reset="none",
        isolation_level="read_committed",
        max_poll_records=max_poll_records,
        fetch_max_wait_ms=fetch_max_wait_ms,
        session_timeout_ms=config.session_timeout_ms,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
    )
    consumer.subscribe(list(topics), listener=_LogRebalances(group_id))
    return consumer


class _LogRebalances(ConsumerRebalanceListener):  # type: ignore[misc]
    """Logs what a rebalance takes from and gives to this member (``topic:partition``)."""

    def __init__(self, group_id: str) -> None:
        self._group = group_id

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        log.info("kafka partitions revoked", group=self._group, partitions=_names(revoked))

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        log.info("kafka partitions assigned", group=self._group, partitions=_names(assigned))


def _names(partitions: Iterable[TopicPartition]) -> list[str]:
    return sorted(f"{tp.topic}:{tp.partition}" for tp in partitions)


async def fetch_batches(
    consumer: AIOKafkaConsumer,
    *,
    timeout_ms: int,
    recover: GapRecovery,
    max_records: int | None = None,
) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
    """``consumer.getmany``, positioning the partitions it cannot read from.

    A committed position outside the log is a gap: logged at error, counted,
    recovered by ``recover`` and only then left for the log start. A partition the
    group has no committed position for is handed to ``recover`` as an ``uncommitted``
    gap (a new group's has nothing to recover; one that lost its offsets does), then
    starts at its log start. The log start is committed once recovered. A failed
    ``recover`` raises with the position unchanged, so nothing is skipped. Returns no
    records on a call that positioned a partition.
    """
    try:
        batches: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]
        batches = await consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
    except NoOffsetForPartitionError as exc:
        tp = exc.args[0]
        log.info("no committed position; reading from the log start", partition=_names([tp]))
        log_start, log_end = await _log_bounds(consumer, tp)
        gap = LogGap(tp.topic, tp.partition, 0, log_start, log_end, uncommitted=True)
        await _recovered(consumer, tp, gap, recover)
        return {}
    except OffsetOutOfRangeError as exc:
        positions: dict[TopicPartition, int] = exc.args[0]
        for tp, position in positions.items():
            await _outside_the_log(consumer, tp, position, recover)
        return {}
    return batches


async def _outside_the_log(
    consumer: AIOKafkaConsumer, tp: TopicPartition, position: int, recover: GapRecovery
) -> None:
    log_start, log_end = await _log_bounds(consumer, tp)
    gap = gap_of(tp.topic, tp.partition, position=position, log_start=log_start, log_end=log_end)
    if gap is None:  # the log holds it again (a stale answer): read from it
        consumer.seek(tp, position)
        return
    metrics.KAFKA_OFFSET_OUT_OF_RANGE.labels(tp.topic, str(tp.partition)).inc()
    log.error(
        "kafka position outside the log; recovering what was skipped",
        topic=tp.topic,
        partition=tp.partition,
        position=position,
        log_start=log_start,
        log_end=log_end,
        skipped=gap.skipped,
    )
    await _recovered(consumer, tp, gap, recover)


async def _log_bounds(consumer: AIOKafkaConsumer, tp: TopicPartition) -> tuple[int, int]:
    """The partition's log start and log end."""
    log_start = (await consumer.beginning_offsets([tp]))[tp]
    return log_start, (await consumer.end_offsets([tp]))[tp]


async def _recovered(
    consumer: AIOKafkaConsumer, tp: TopicPartition, gap: LogGap, recover: GapRecovery
) -> None:
    """``recover(gap)``, then read on from the log start and commit it: the first record
    still held, not yet processed, so committing it skips nothing."""
    await recover(gap)
    if tp in consumer.assignment():  # else a rebalance took it: its new owner recovers again
        consumer.seek(tp, gap.log_start)
        await commit_positions(consumer, {tp: gap.log_start})


async def commit_positions(
    consumer: AIOKafkaConsumer, positions: dict[TopicPartition, int]
) -> bool:
    """Commit ``positions`` (next offset to read per partition); call only once the
    effect of every earlier message is durable.

    Returns False, without raising, when a rebalance took the partitions away: the
    new owner resumes from the last committed position and re-applies the tail, which
    the handlers do idempotently. Any other failure raises.
    """
    try:
        await consumer.commit(positions)
    except (CommitFailedError, RebalanceInProgressError, IllegalStateError) as exc:
        # info: what follows a rebalance (a member joining or leaving, the brokers away
        # for longer than the session), and replaying the tail is idempotent
        log.info("offset commit lost to a rebalance; the tail will be replayed", error=str(exc))
        return False
    return True
