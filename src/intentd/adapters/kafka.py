"""Kafka through aiokafka, with the delivery settings of DESIGN.md §3.

- :class:`KafkaPublisher`: ``acks=all``, every send awaited, flushed on stop; idempotent
  unless ``kafka.idempotent_producer`` is false (a broker without InitProducerId v0: a
  retried send may then be written twice, which consumers already dedupe by message id).
  A send that returns has been acknowledged by all in-sync replicas.
- :func:`make_consumer`: auto-commit off, start from the earliest offset of a new
  group, the group's session timeout and heartbeat from ``kafka``; the caller commits
  ``offset + 1`` itself after its database commit (:func:`commit_positions`). Every
  rebalance is logged: ``kafka partitions revoked`` / ``kafka partitions assigned``.

This module and its siblings in ``adapters`` are the only code that imports aiokafka.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Protocol

import structlog
from aiokafka import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    ConsumerRecord,
    TopicPartition,
)
from aiokafka.errors import CommitFailedError, IllegalStateError, RebalanceInProgressError

from intentd.messages import OutgoingMessage
from intentd.settings import KafkaConfig

log = structlog.get_logger()

__all__ = [
    "ConsumerRecord",
    "KafkaPublisher",
    "OutgoingMessage",  # intentd.messages' record, named here too for the adapters and tests
    "Record",
    "TopicPartition",
    "commit_positions",
    "make_consumer",
]


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
        self._producer = AIOKafkaProducer(
            bootstrap_servers=config.bootstrap_servers,
            client_id=f"{config.client_id}{client_suffix}",
            enable_idempotence=config.idempotent_producer,
            acks="all",
            linger_ms=0,
            request_timeout_ms=30_000,
        )
        self._started = False

    async def start(self) -> None:
        await self._producer.start()
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
    """A group consumer with auto-commit off; the caller starts, commits and stops it."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=config.bootstrap_servers,
        client_id=f"{config.client_id}-{group_id}",
        group_id=group_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
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
        log.warning("offset commit lost to a rebalance; the tail will be replayed", error=str(exc))
        return False
    return True
