"""The webhooks' intake: from the events topic to the deliveries recorded in the store.

Delivery contract (DESIGN.md §3): :func:`consume_events` records every matching
delivery of a batch (``WebhookStore.record_events``, one transaction per batch) before
it commits the batch's offsets; a crash replays the uncommitted tail, which records
nothing new. An event that cannot be parsed is logged and skipped (it could never be
delivered). Replicas share the partitions through the consumer group.

The body sent to endpoints is the Kafka envelope (``contract.events.envelope``) with ``mode``
added when the envelope does not carry it; it is serialised once here
(:func:`parse_event`, pure) and every attempt sends exactly these bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
import structlog

from intentd import observability as metrics
from intentd.faults import crash_point
from intentd.supervision import progress
from intentd.webhooks.matching import event_mode
from intentd.webhooks.ports import EventFeed, EventToRecord, WebhookStore

__all__ = ["MalformedEvent", "consume_events", "parse_event"]

log = structlog.get_logger()


class MalformedEvent(ValueError):
    """An event on the topic that lacks what a webhook needs (it is skipped, logged)."""


def parse_event(value: bytes, networks: Mapping[str, str]) -> EventToRecord:
    """The event in ``value``; ``networks`` maps chain names to ``main``/``test``."""
    try:
        event: Any = orjson.loads(value)
        intent = event["intent"]
        parsed = EventToRecord(
            event_id=str(event["id"]),
            event_type=str(event["type"]),
            client_id=UUID(str(intent["client_id"])),
            mode=event_mode(event, networks),
            intent_id=int(intent["id"]),
            sequence=int(event["sequence"]),
            created_at=datetime.fromisoformat(str(event["created_at"]).replace("Z", "+00:00")),
            body=b"",
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise MalformedEvent(f"{type(exc).__name__}: {exc}") from None
    if "mode" not in event:
        event["mode"] = parsed.mode
    return EventToRecord(
        event_id=parsed.event_id,
        event_type=parsed.event_type,
        client_id=parsed.client_id,
        mode=parsed.mode,
        intent_id=parsed.intent_id,
        sequence=parsed.sequence,
        created_at=parsed.created_at,
        body=orjson.dumps(event),
    )


async def consume_events(
    feed: EventFeed,
    store: WebhookStore,
    networks: Mapping[str, str],
    stop: asyncio.Event,
    on_recorded: Callable[[], None] = lambda: None,
) -> None:
    """Record the deliveries of each batch, then commit its offsets; until ``stop``."""
    while not stop.is_set():
        batches = await feed.getmany(timeout_ms=200, max_records=1000)
        progress()
        if not batches:
            continue
        events: list[EventToRecord] = []
        positions: dict[Any, int] = {}
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
        await feed.commit(positions)
