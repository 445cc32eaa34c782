"""Tansu as ``make infra-up`` runs it, on a layout of its own (the shared stack is left
alone): the pinned binary, start, status, a consumer group, the producer limits, stop."""

import asyncio
import secrets
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError
from tests.broker_tansu import create_topics

from intentd_dev.devinfra import tansu
from intentd_dev.devinfra.layout import Layout, find_layout

pytestmark = pytest.mark.integration


@pytest.fixture
def own_layout(tmp_path: Path) -> Layout:
    """A layout in `tmp_path` whose ``.local/bin/tansu`` is the checked-out pinned binary."""
    binary = tansu.tansu_binary(find_layout())
    layout = Layout(tmp_path)
    layout.make_dirs()
    (layout.local / "bin").mkdir()
    (layout.local / "bin" / "tansu").symlink_to(binary)
    return layout


def test_the_installed_binary_is_the_pinned_one() -> None:
    binary = tansu.tansu_binary(find_layout())
    assert tansu._sha256(binary) == tansu.BINARY_SHA256
    assert binary.stat().st_mode & 0o111


async def test_up_is_idempotent_serves_a_group_and_down_stops_it(own_layout: Layout) -> None:
    state, started = await asyncio.to_thread(tansu.ensure_broker, own_layout)
    try:
        assert started and tansu.answers(state.bootstrap)
        again, started_again = await asyncio.to_thread(tansu.ensure_broker, own_layout)
        assert (again, started_again) == (state, False)
        await _round_trip(state.bootstrap)
    finally:
        assert await asyncio.to_thread(tansu.stop_broker, own_layout)
    pidfile, state_file = own_layout.pidfile(tansu.COMPONENT), own_layout.state(tansu.COMPONENT)
    assert tansu.running(pidfile, state_file) is None
    assert not tansu.answers(state.bootstrap)
    assert not await asyncio.to_thread(tansu.stop_broker, own_layout)


async def _round_trip(bootstrap: str) -> None:
    topic = f"devinfra-{secrets.token_hex(4)}"
    await create_topics(bootstrap, [topic], partitions=2)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False)
    await producer.start()
    try:
        for n in range(3):
            await producer.send_and_wait(topic, f"value-{n}".encode(), key=b"same-key")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"{topic}-group",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        values: list[bytes | None] = []
        async with asyncio.timeout(20):
            while len(values) < 3:
                batches = await consumer.getmany(timeout_ms=200)
                values += [m.value for ms in batches.values() for m in ms]
    finally:
        await consumer.stop()
    assert values == [b"value-0", b"value-1", b"value-2"]

    # The documented limit: aiokafka sends InitProducerId v0, which Tansu does not serve,
    # so `kafka.idempotent_producer` must be false against it.
    with pytest.raises(KafkaError):
        await _send_idempotently(bootstrap, topic)


async def _send_idempotently(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    try:
        async with asyncio.timeout(10):
            await producer.start()
            await producer.send_and_wait(topic, b"never")
    finally:
        await producer.stop()
