"""A group consumer (aiokafka) that a stop reaches during a group join too.

aiokafka's ``start`` and ``getmany`` wait for the group join and a partition
assignment without a timeout, and its ``stop`` waits for a join in progress to end
(the broker answers a JoinGroup once every member has rejoined or its rebalance
timeout has passed: seconds, more when a member died without leaving). A role
stopped then would miss its drain deadline.

- :func:`start_until_stopped` is False if ``stop`` came before the consumer joined.
- :func:`fetch_until_stopped` returns no records as soon as ``stop`` is set. Records
  it was waiting for stay uncommitted, so the group delivers them again.
- :func:`close_consumer` leaves the group, or gives up after ``within`` seconds: the
  broker then drops the member after its session timeout, as after a crash. Closing
  commits nothing (auto-commit is off), so no offset moves past unprocessed work. A
  cancellation aiokafka raises from its own tasks while it stops is not passed on
  (the caller's own failure would turn into a cancellation, which task groups ignore).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer

from intentd.adapters.kafka import GapRecovery, fetch_batches
from intentd.wait import Stopped, until_stopped

__all__ = ["CLOSE_SECONDS", "close_consumer", "fetch_until_stopped", "start_until_stopped"]

CLOSE_SECONDS = 3.0
"""How long closing a consumer may take before it is abandoned."""

log = structlog.get_logger()


async def start_until_stopped(consumer: AIOKafkaConsumer, stop: asyncio.Event) -> bool:
    """``consumer.start()``; False if ``stop`` came first (close it all the same)."""
    try:
        await until_stopped(consumer.start(), stop)
    except Stopped:
        return False
    return True


async def fetch_until_stopped(
    consumer: AIOKafkaConsumer,
    stop: asyncio.Event,
    *,
    timeout_ms: int,
    recover: GapRecovery,
    max_records: int | None = None,
) -> Mapping[Any, Sequence[Any]]:
    """``fetch_batches(...)`` (``consumer.getmany`` that recovers a position outside the
    log with ``recover``), or nothing once ``stop`` is set (a recovery cut short leaves
    the position where it was: the next start recovers again)."""
    try:
        batches: Mapping[Any, Sequence[Any]] = await until_stopped(
            fetch_batches(
                consumer, timeout_ms=timeout_ms, recover=recover, max_records=max_records
            ),
            stop,
        )
    except Stopped:
        return {}
    return batches


async def close_consumer(consumer: AIOKafkaConsumer, within: float = CLOSE_SECONDS) -> None:
    """``consumer.stop()``, abandoned after ``within`` seconds (see the module)."""
    try:
        await asyncio.wait_for(consumer.stop(), within)
    except TimeoutError:
        log.warning(
            "kafka consumer did not leave its group in time (a join in progress);"
            " the group drops it after its session timeout",
            seconds=within,
        )
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the caller is being cancelled
        # aiokafka's stop may re-raise the cancellation of one of its own tasks (the
        # brokers away): the consumer is closed as far as it got; the caller's failure,
        # if any, must not turn into a quiet cancellation (a task group ignores those)
        log.warning("kafka consumer's stop was cut short by its own tasks")
