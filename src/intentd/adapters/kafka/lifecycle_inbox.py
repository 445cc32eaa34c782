"""The lifecycle's inbox and dead-letter publisher on Kafka (aiokafka).

:class:`KafkaInbox` is a group consumer with auto-commit off whose commit loses to a
rebalance without raising (:func:`~intentd.adapters.kafka.commit_positions`: the new
owner replays the tail, which the handlers apply idempotently). It reads through
:func:`~intentd.adapters.kafka.fetch_batches`: a committed position the log no longer
holds is alerted on and recovered (``recover``) before it reads on, never reset quietly.
:class:`KafkaDeadLetters` sends the lifecycle's messages on the process's producer,
each acknowledged before it returns. :class:`KafkaLogProgress` compares the group's
committed positions (whichever replica committed them) with the topics' end offsets,
both read from the brokers through the lifecycle's consumer of the moment
(:class:`CurrentConsumer`: a consumer that failed is replaced by a new one; while there
is none, how far the logs are applied is unknown).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from intentd.adapters import kafka
from intentd.adapters.kafka.consumer_stop import fetch_until_stopped
from intentd.messages import OutgoingMessage

__all__ = ["CurrentConsumer", "KafkaDeadLetters", "KafkaInbox", "KafkaLogProgress"]


class CurrentConsumer:
    """The lifecycle's consumer while one is in its group (None between two)."""

    def __init__(self) -> None:
        self.consumer: Any = None


class KafkaInbox:
    def __init__(self, consumer: Any, stop: asyncio.Event, *, recover: kafka.GapRecovery) -> None:
        """``consumer``: an ``AIOKafkaConsumer`` (:func:`~intentd.adapters.kafka.make_consumer`),
        started and stopped by the caller; ``getmany`` returns nothing once ``stop`` is
        set (``adapters.kafka.consumer_stop``); ``recover``: what recovers a gap
        (:meth:`~intentd.scanning.gap_recovery.LogGapRecovery.recover`)."""
        self._consumer = consumer
        self._stop = stop
        self._recover = recover

    async def getmany(self, *, timeout_ms: int) -> Mapping[Any, Sequence[Any]]:
        return await fetch_until_stopped(
            self._consumer, self._stop, timeout_ms=timeout_ms, recover=self._recover
        )

    async def commit(self, positions: Mapping[Any, int]) -> bool:
        return await kafka.commit_positions(self._consumer, dict(positions))


class KafkaDeadLetters:
    def __init__(self, publisher: kafka.KafkaPublisher) -> None:
        self._publisher = publisher

    async def publish(self, message: OutgoingMessage) -> None:
        await self._publisher.publish(message)


class KafkaLogProgress:
    """:class:`~intentd.lifecycle.ports.LogProgress` of ``topics`` for the group of the
    lifecycle's consumer (``consumer``: an ``AIOKafkaConsumer`` started by the caller, or
    a :class:`CurrentConsumer`); unknown (None, False) while there is no consumer."""

    def __init__(self, consumer: Any, topics: Sequence[str]) -> None:
        self._current = consumer if isinstance(consumer, CurrentConsumer) else None
        self._fixed = None if isinstance(consumer, CurrentConsumer) else consumer
        self._topics = list(topics)

    def _consumer(self) -> Any:
        return self._current.consumer if self._current is not None else self._fixed

    async def ends(self) -> Mapping[tuple[str, int], int] | None:
        consumer = self._consumer()
        if consumer is None:
            return None
        partitions = []
        for topic in self._topics:
            numbers = consumer.partitions_for_topic(topic)
            if not numbers:
                return None
            partitions += [kafka.TopicPartition(topic, n) for n in sorted(numbers)]
        found = await consumer.end_offsets(partitions)
        return {(tp.topic, tp.partition): offset for tp, offset in found.items()}

    async def applied(self, ends: Mapping[tuple[str, int], int]) -> bool:
        consumer = self._consumer()
        if consumer is None:
            return False
        for (topic, partition), end in ends.items():
            committed = await consumer.committed(kafka.TopicPartition(topic, partition))
            if (committed or 0) < end:
                return False
        return True
