"""Tansu for the tests that need real consumer groups (see `intentd_dev.devinfra.tansu`).

`tansu_broker` yields the bootstrap of the broker ``make infra-up`` started
(``INTENTD_TANSU_BOOTSTRAP``) or, when the running stack predates it, of one started for
the test session alone and stopped after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from intentd_dev.devinfra import tansu
from intentd_dev.devinfra.layout import find_layout

TOPIC_NAMES = ("intent-events", "dlq", "actions", "action-results")


def tansu_broker(infra: dict[str, str]) -> Iterator[str]:
    """The body of a session fixture: a Tansu bootstrap address."""
    shared = infra.get("INTENTD_TANSU_BOOTSTRAP")
    if shared and tansu.answers(shared):
        yield shared
        return
    binary = tansu.tansu_binary(find_layout())
    with tempfile.TemporaryDirectory(prefix="tansu-") as scratch:
        run = Path(scratch)
        pidfile, state_file = run / "tansu.pid", run / "tansu.json"
        state = tansu.launch(binary, log=run / "tansu.log", pidfile=pidfile, state_file=state_file)
        try:
            yield state.bootstrap
        finally:
            tansu.stop(pidfile, state_file)


async def create_topics(bootstrap: str, topics: Sequence[str], partitions: int = 4) -> None:
    """Create `topics` through the admin API (existing ones are kept) and wait until the
    broker's metadata lists them."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        for topic in topics:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics([NewTopic(topic, partitions, 1)])
        async with asyncio.timeout(10):
            while not set(topics) <= set(await admin.list_topics()):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
    finally:
        await admin.close()
