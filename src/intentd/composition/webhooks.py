"""The ``intentd webhooks`` role: Kafka intake, the dispatcher, and the health gauges.

Intake (delivery contract of DESIGN.md §3): the consumer (group ``webhooks.group``)
reads ``<prefix>.intent-events`` and records every matching delivery in PostgreSQL
(``PostgresWebhookStore.record_events``, one transaction per batch) before it commits
the batch's offsets; a crash replays the uncommitted tail, which records nothing new.
An event that cannot be parsed is logged and skipped (it could never be delivered).
Replicas share the partitions through the consumer group, and the dispatchers of every
replica share the deliveries through their leases.

Three tasks, each supervised (``intentd.supervision``): the intake, the dispatcher
(with its ``LISTEN`` connection) and the upkeep (health gauges, pruning). An outage of
PostgreSQL or Kafka makes the task that met it wait for the dependency and start over:
the intake with a new consumer, so it resumes from the committed offsets and never
goes past a batch it could not record; the dispatcher with the deliveries whose leases
expire in the meantime (delivery is at least once). The process stays up.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta

import structlog
from aiokafka import AIOKafkaConsumer

from intentd import observability as metrics
from intentd.adapters.consumer_stop import (
    close_consumer,
    fetch_until_stopped,
    start_until_stopped,
)
from intentd.adapters.diagnosis import diagnose_for
from intentd.adapters.held_connections import give_back, unlisten
from intentd.adapters.kafka import TopicPartition, commit_positions, make_consumer
from intentd.adapters.postgres import Pool
from intentd.adapters.webhook_http import HttpSender
from intentd.adapters.webhook_store import CHANNEL, PostgresWebhookStore
from intentd.composition.roles import STALL_SECONDS
from intentd.faults import crash_point
from intentd.lifecycle.log_gaps import LogGap
from intentd.messages import events_topic
from intentd.runtime import READINESS, Role
from intentd.settings import Settings
from intentd.supervision import Diagnose, Health, Kind, progress, supervise
from intentd.webhooks.dispatcher import Dispatcher
from intentd.webhooks.intake import MalformedEvent, parse_event
from intentd.webhooks.ports import EventToRecord, WebhookStore
from intentd.webhooks.secret_box import secret_box

__all__ = ["consume_events", "webhooks_role"]

log = structlog.get_logger()
_HEALTH_EVERY = 15.0
_PRUNE_EVERY = 3600.0


def networks_of(settings: Settings) -> dict[str, str]:
    return {name: chain.network for name, chain in settings.chains.items()}


async def _events_gap(gap: LogGap) -> None:
    """Events deleted unread are not re-derived here: they stay in the event log
    (``intent_events``, docs/runbook.md, KafkaPositionOutsideLog); the gap is alerted on.
    A partition with no committed position is taken for a new group's."""
    if gap.uncommitted:
        return
    log.error(
        "webhook events deleted before they were read; their deliveries are missing",
        topic=gap.topic,
        partition=gap.partition,
        skipped=gap.skipped,
    )


async def consume_events(
    consumer: AIOKafkaConsumer,
    store: WebhookStore,
    networks: dict[str, str],
    stop: asyncio.Event,
    on_recorded: Callable[[], None] = lambda: None,
) -> None:
    """Record the deliveries of each batch, then commit its offsets; until ``stop``."""
    while not stop.is_set():
        batches = await fetch_until_stopped(
            consumer, stop, timeout_ms=200, max_records=1000, recover=_events_gap
        )
        progress()
        if not batches:
            continue
        events: list[EventToRecord] = []
        positions: dict[TopicPartition, int] = {}
        for partition, records in batches.items():
            for record in records:
                try:
                    events.append(parse_event(record.value or b"", networks))
                except MalformedEvent as exc:
                    log.warning(
                        "event skipped: not a webhook event",
                        topic=record.topic,
                        partition=record.partition,
                        offset=record.offset,
                        reason=str(exc),
                    )
            positions[partition] = records[-1].offset + 1
        added = await store.record_events(events)
        crash_point("webhooks.after_record")
        if added:
            metrics.WEBHOOK_RECORDED.inc(added)
            on_recorded()
        await commit_positions(consumer, positions)


async def _maintain(
    store: PostgresWebhookStore, retention: timedelta, stop: asyncio.Event, diagnose: Diagnose
) -> None:
    """Every 15 s the health gauges; every hour, forget what is older than ``retention``.
    An outage ends it (its supervisor waits and starts it again); any other failure is
    logged and tried at the next round (gauges and pruning must not stop the role)."""
    last_prune = 0.0
    while not stop.is_set():
        try:
            now = datetime.now(UTC)
            health = await store.health(now)
            if time.monotonic() - last_prune > _PRUNE_EVERY:
                pruned = await store.prune(now - retention)
                last_prune = time.monotonic()
                if pruned:
                    log.info("webhook deliveries pruned", count=pruned)
        except Exception as exc:
            if diagnose(exc).kind is Kind.OUTAGE:
                raise
            log.exception("webhook maintenance failed")
        else:
            metrics.WEBHOOK_PENDING.set(health.pending)
            metrics.WEBHOOK_OLDEST_PENDING.set(health.oldest_seconds)
            metrics.WEBHOOK_DISABLED_ENDPOINTS.set(health.disabled_endpoints)
            progress()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), _HEALTH_EVERY)


def webhooks_role(settings: Settings, *, pool: Pool, health: Health | None = None) -> Role:
    """Intake, dispatcher and upkeep on the process's pool, with their own HTTP client."""
    box = secret_box(settings)  # refuse to start without the key
    config = settings.webhooks

    async def role(stop: asyncio.Event) -> None:
        READINESS.expect("webhooks")
        supervisor = health or Health()
        diagnose = diagnose_for(None)
        store = PostgresWebhookStore(pool)
        sender = HttpSender(
            allow_private=config.allow_private_targets,
            connect_timeout=config.connect_timeout,
            total_timeout=config.total_timeout,
        )
        dispatcher = Dispatcher(
            store,
            sender,
            box,
            lambda: datetime.now(UTC),
            max_in_flight=config.max_in_flight,
            per_endpoint=config.per_endpoint_concurrency,
            per_client=config.per_client_in_flight,
            lease=timedelta(seconds=2 * config.total_timeout + 5),
            idle_poll=config.poll_interval,
        )
        networks = networks_of(settings)
        retention = timedelta(days=config.retention_days)

        def wake(*_: object) -> None:
            dispatcher.wakeup.set()

        async def intake(stop: asyncio.Event) -> None:
            """Join the group with a new consumer, record until stop, leave."""
            consumer = make_consumer(
                settings.kafka,
                [events_topic(settings.kafka.topic_prefix)],
                group_id=config.group,
                fetch_max_wait_ms=config.fetch_max_wait_ms,
            )
            try:
                if not await start_until_stopped(consumer, stop):
                    return
                READINESS.ready("webhooks")
                log.info("webhooks started", group=config.group)
                await consume_events(consumer, store, networks, stop, dispatcher.wakeup.set)
            finally:
                await close_consumer(consumer)

        async def dispatch(stop: asyncio.Event) -> None:
            """Dispatch until stop, woken by NOTIFY on a connection of its own."""
            listener = await pool.acquire()
            try:
                await listener.add_listener(CHANNEL, wake)
                try:
                    await dispatcher.run(stop)
                finally:
                    await unlisten(listener, CHANNEL, wake)
            finally:
                await give_back(pool, listener)

        async def upkeep(stop: asyncio.Event) -> None:
            await _maintain(store, retention, stop, diagnose)

        async with AsyncExitStack() as closing:  # each step runs, even if one is cancelled
            closing.callback(log.info, "webhooks stopped")
            closing.push_async_callback(sender.close)
            async with asyncio.TaskGroup() as group:
                group.create_task(
                    supervise(
                        "webhook intake",
                        intake,
                        stop,
                        health=supervisor,
                        diagnose=diagnose,
                        stall_after=STALL_SECONDS,
                        readiness="webhooks",
                    )
                )
                for name, run in (("webhook dispatcher", dispatch), ("webhook upkeep", upkeep)):
                    group.create_task(
                        supervise(name, run, stop, health=supervisor, diagnose=diagnose)
                    )

    return role
