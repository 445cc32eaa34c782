"""The webhooks' event feed on Kafka (aiokafka): :class:`~intentd.webhooks.ports.EventFeed`.

A group consumer with auto-commit off, read through
:func:`~intentd.adapters.kafka.consumer_stop.fetch_until_stopped` (nothing once the role is
stopping); its commit loses to a rebalance without raising
(:func:`~intentd.adapters.kafka.commit_positions`). Events deleted from the log before
they were read are not re-derived here: they stay in the event log (``intent_events``,
docs/runbook.md, KafkaPositionOutsideLog); the gap is alerted on. A partition with no
committed position is taken for a new group's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from intentd.adapters import kafka
from intentd.adapters.kafka.consumer_stop import fetch_until_stopped
from intentd.lifecycle.log_gaps import LogGap

__all__ = ["KafkaEventFeed"]

log = structlog.get_logger()


class KafkaEventFeed:
    def __init__(self, consumer: Any, stop: asyncio.Event) -> None:
        """``consumer``: an ``AIOKafkaConsumer`` of the events topic
        (:func:`~intentd.adapters.kafka.make_consumer`), started and stopped by the caller."""
        self._consumer = consumer
        self._stop = stop

    async def getmany(self, *, timeout_ms: int, max_records: int) -> Mapping[Any, Sequence[Any]]:
        return await fetch_until_stopped(
            self._consumer,
            self._stop,
            timeout_ms=timeout_ms,
            max_records=max_records,
            recover=_events_gap,
        )

    async def commit(self, positions: Mapping[Any, int]) -> bool:
        return await kafka.commit_positions(self._consumer, dict(positions))


async def _events_gap(gap: LogGap) -> None:
    """Alert on events deleted unread (see the module)."""
    if gap.uncommitted:
        return
    log.error(
        "webhook events deleted before they were read; their deliveries are missing",
        topic=gap.topic,
        partition=gap.partition,
        skipped=gap.skipped,
    )
