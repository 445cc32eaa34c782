"""The dev broker's outage commands (``down``/``up``), on a broker of the test's own.

Kafka clients learn the brokers' addresses from metadata, so a TCP proxy in front of
the bootstrap address does not cut them off; the mock cluster's own switch does. Never
the shared broker: the test starts one under its own ``.local``.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from intentd_dev.devinfra.kafka_mock import (
    BrokerState,
    create_topics,
    set_broker_down,
    start_broker,
    stop_broker,
)
from intentd_dev.devinfra.layout import Layout

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerState]:
    layout = Layout(tmp_path)
    layout.run.mkdir(parents=True)
    state = start_broker(layout)
    yield state
    stop_broker(layout)


async def test_down_closes_every_connection_and_up_lets_clients_resume(broker: BrokerState) -> None:
    topic = f"outage-{secrets.token_hex(4)}"
    create_topics(broker.control, [topic], partitions=1)
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, request_timeout_ms=2000)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"before")
        set_broker_down(broker.control, True)
        with pytest.raises((KafkaError, TimeoutError)):
            await asyncio.wait_for(producer.send_and_wait(topic, b"during"), 3)
        set_broker_down(broker.control, False)
        deadline = asyncio.get_running_loop().time() + 30
        while True:  # the client reconnects by itself, after its own backoff
            try:
                await asyncio.wait_for(producer.send_and_wait(topic, b"after"), 3)
                break
            except (KafkaError, TimeoutError):
                assert asyncio.get_running_loop().time() < deadline, "no write after up"
    finally:
        await producer.stop()
