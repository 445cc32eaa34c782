"""The lifecycle's inbox and dead-letter publisher on Kafka (aiokafka).

:class:`KafkaInbox` is a group consumer with auto-commit off whose commit loses to a
rebalance without raising (:func:`~intentd.adapters.kafka.commit_positions`: the new
owner replays the tail, which the handlers apply idempotently). It reads through
:func:`~intentd.adapters.kafka.fetch_batches`: a committed position the log no longer
holds is alerted on and recovered (``recover``) before it reads on, never reset quietly.
:class:`KafkaDeadLetters` sends the lifecycle's messages on the process's producer,
each acknowledged before it returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from intentd.adapters import kafka
from intentd.adapters.consumer_stop import fetch_until_stopped
from intentd.messages import OutgoingMessage

__all__ = ["KafkaDeadLetters", "KafkaInbox"]


class KafkaInbox:
    def __init__(self, consumer: Any, stop: asyncio.Event, *, recover: kafka.GapRecovery) -> None:
        """``consumer``: an ``AIOKafkaConsumer`` (:func:`~intentd.adapters.kafka.make_consumer`),
        started and stopped by the caller; ``getmany`` returns nothing once ``stop`` is
        set (``adapters.consumer_stop``); ``recover``: what recovers a gap
        (:meth:`~intentd.lifecycle.gap_recovery.LogGapRecovery.recover`)."""
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
