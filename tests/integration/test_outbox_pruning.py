"""The outbox stays bounded: a running relay deletes rows published long ago, and
never a row that is not yet published (real PostgreSQL and Kafka)."""

from __future__ import annotations

import asyncio

import pytest

from intentd.adapters.kafka import KafkaPublisher
from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.lifecycle_store import enqueue
from intentd.adapters.postgres.outbox import OutboxRelay
from intentd.settings import Settings

pytestmark = pytest.mark.integration


async def test_a_running_relay_prunes_what_it_published_long_ago(
    own_stack: tuple[Settings, Pool],
) -> None:
    settings, pool = own_stack
    topic = f"{settings.kafka.topic_prefix}.intent-events"
    async with pool.acquire() as conn:
        for key in ("old", "recent"):
            await enqueue(conn, topic=topic, key=key, payload=b"{}")
        await conn.execute(
            "UPDATE outbox SET published_at = now() - interval '8 days' WHERE key = 'old'"
        )
        await conn.execute("UPDATE outbox SET published_at = now() WHERE key = 'recent'")
        # Unpublished for two weeks (Kafka was down): it must be relayed, never pruned.
        await enqueue(conn, topic=topic, key="late", payload=b"{}")
        await conn.execute(
            "UPDATE outbox SET created_at = now() - interval '14 days' WHERE key = 'late'"
        )
    publisher = KafkaPublisher(settings.kafka)
    await publisher.start()
    stop = asyncio.Event()
    relay = OutboxRelay(pool, publisher, idle_poll=0.05, keep_days=7, prune_every=0.05)
    task = asyncio.create_task(relay.run(stop))
    try:
        keys: set[str] = set()
        for _ in range(100):
            keys = {r["key"] for r in await pool.fetch("SELECT key FROM outbox")}
            if "old" not in keys:
                break
            await asyncio.sleep(0.05)
        assert keys == {"recent", "late"}
        published = await pool.fetchval("SELECT published_at FROM outbox WHERE key = 'late'")
        assert published is not None
    finally:
        stop.set()
        await task
        await publisher.stop()
