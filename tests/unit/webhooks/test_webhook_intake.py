"""The webhooks' intake loop on fakes of its ports: record a batch, then commit it."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import orjson
from tests.unit.webhooks.webhook_fakes import FakeFeed, FakeRecord, FakeStore

from intentd.webhooks.intake import consume_events

TOPIC = "intentd.intent-events"


def event(intent_id: int, sequence: int) -> bytes:
    return orjson.dumps(
        {
            "id": f"evt_{intent_id}_{sequence}",
            "type": "intent_funded",
            "sequence": sequence,
            "created_at": "2026-01-01T00:00:00Z",
            "intent": {"id": intent_id, "client_id": str(uuid4()), "source_chain": "BASE"},
        }
    )


async def test_a_batch_is_recorded_before_its_offsets_are_committed() -> None:
    stop = asyncio.Event()
    feed = FakeFeed(
        [
            {
                0: [FakeRecord(TOPIC, 0, 4, b"not an event"), FakeRecord(TOPIC, 0, 5, event(1, 1))],
                1: [FakeRecord(TOPIC, 1, 9, event(2, 1))],
            }
        ],
        stop,
    )
    store = FakeStore()
    woken: list[None] = []
    await consume_events(feed, store, {"BASE": "main"}, stop, lambda: woken.append(None))
    assert [(e.intent_id, e.mode) for e in store.recorded] == [(1, "live"), (2, "live")]
    assert orjson.loads(store.recorded[0].body)["mode"] == "live"  # added to the body sent
    assert feed.commits == [{0: 6, 1: 10}]  # the malformed event is skipped, not stuck on
    assert woken == [None]
