"""The ``intentd webhooks`` role, wired: intake, dispatcher and upkeep on their ports.

The loops live in ``webhooks/``: the intake (``webhooks.intake.consume_events``, on a
:class:`~intentd.adapters.kafka.webhook_feed.KafkaEventFeed` of group ``webhooks.group`` on
``<prefix>.intent-events``), the dispatcher (``webhooks.dispatcher``, with its
``LISTEN`` connection) and the upkeep (``webhooks.upkeep``: health gauges, pruning);
this module builds their adapters and supervises each (``intentd.supervision``).
Replicas share the partitions through the consumer group, and the dispatchers of every
replica share the deliveries through their leases.

An outage of PostgreSQL or Kafka makes the task that met it wait for the dependency and
start over: the intake with a new consumer, so it resumes from the committed offsets and
never goes past a batch it could not record; the dispatcher with the deliveries whose
leases expire in the meantime (delivery is at least once). The process stays up.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta

import structlog

from intentd.adapters.diagnosis import diagnose_for
from intentd.adapters.http.webhook_sender import HttpSender
from intentd.adapters.kafka import make_consumer
from intentd.adapters.kafka.consumer_stop import close_consumer, start_until_stopped
from intentd.adapters.kafka.webhook_feed import KafkaEventFeed
from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.held_connections import give_back, unlisten
from intentd.adapters.postgres.webhook_store import CHANNEL, PostgresWebhookStore
from intentd.composition.roles import STALL_SECONDS
from intentd.messages import events_topic
from intentd.runtime import READINESS, Role
from intentd.settings import Settings
from intentd.supervision import Health, supervise
from intentd.webhooks.dispatcher import Dispatcher
from intentd.webhooks.intake import consume_events
from intentd.webhooks.secret_box import secret_box
from intentd.webhooks.upkeep import maintain

__all__ = ["webhooks_role"]

log = structlog.get_logger()


def networks_of(settings: Settings) -> dict[str, str]:
    return {name: chain.network for name, chain in settings.chains.items()}


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
                feed = KafkaEventFeed(consumer, stop)
                await consume_events(feed, store, networks, stop, dispatcher.wakeup.set)
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
            await maintain(store, retention, stop, diagnose)

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
