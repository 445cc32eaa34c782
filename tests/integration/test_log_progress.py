"""The expiry's view of the lifecycle's progress on the local broker
(:class:`~intentd.adapters.kafka.lifecycle_inbox.KafkaLogProgress`): the end offsets of every
partition, and whether the group committed up to them (any member's commit counts)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.structs import TopicPartition
from tests.conftest import CHAINS, new_topic_prefix
from tests.support import unexpected_gap

from intentd.adapters.kafka import commit_positions, fetch_batches, make_consumer
from intentd.adapters.kafka.lifecycle_inbox import KafkaLogProgress
from intentd.messages import deposits_topic
from intentd.settings import Settings


async def test_applied_once_the_group_committed_up_to_the_end_offsets(
    infra: dict[str, str], make_settings: Callable[..., Settings]
) -> None:
    prefix = new_topic_prefix(infra)  # empty topics of this test alone
    base = make_settings()
    kafka: dict[str, Any] = base.kafka.model_dump() | {"topic_prefix": prefix}
    settings = make_settings(kafka=kafka)
    topic = deposits_topic(prefix, next(iter(CHAINS)))
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"deposit", partition=1)
    finally:
        await producer.stop()
    consumer = make_consumer(settings.kafka, [topic], group_id=f"g-{secrets.token_hex(4)}")
    await consumer.start()
    try:
        while not consumer.assignment():
            await fetch_batches(consumer, timeout_ms=100, recover=unexpected_gap)
        progress = KafkaLogProgress(consumer, [topic])
        ends = await progress.ends()
        assert ends == {(topic, 0): 0, (topic, 1): 1, (topic, 2): 0, (topic, 3): 0}
        assert not await progress.applied(ends)
        assert await commit_positions(consumer, {TopicPartition(topic, 1): 1})
        assert await progress.applied(ends)
        assert await KafkaLogProgress(consumer, [f"{prefix}.unknown"]).ends() is None
    finally:
        await consumer.stop()
