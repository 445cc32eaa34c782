"""A running poller (own anvil, PostgreSQL, the Kafka dev broker) drops an intent from
its watched set when the intent leaves the watch window, without a restart: a payment
before is published, one after is not; a live intent stays watched throughout."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.integration.poller_chain import Chain, own_chain
from tests.integration.test_poller import (  # noqa: F401 - polling is a fixture
    TopicReader,
    polling,
    to,
)
from tests.support import new_intent

from intentd.adapters.postgres import Pool
from intentd.indexer.watched import REORG_MARGIN
from intentd.settings import Settings

pytestmark = pytest.mark.integration
ENDED = "UPDATE intents SET status = 'COMPLETED', terminal_at = $2 WHERE id = $1"
NAME, CHAIN_ID = "WINDOWTEST", 989_999  # a chain (cursor, topic) of its own


@pytest.fixture
async def chain(
    infra: dict[str, str], make_settings: Callable[..., Settings], topic_prefix: str
) -> AsyncIterator[Chain]:
    async with own_chain(infra, make_settings, topic_prefix, NAME, CHAIN_ID) as made:
        yield made


async def test_a_running_poller_stops_watching_an_intent_that_leaves_the_window(
    chain: Chain,
    pool: Pool,
    settings: Settings,
    infra: dict[str, str],
    polling: Any,  # noqa: F811
) -> None:
    live, leaving, old = [await new_intent(pool, settings) for _ in range(3)]
    window = timedelta(days=chain.settings.indexer.watch_retention_days) + REORG_MARGIN
    now = await pool.fetchval("SELECT now()")
    await pool.execute(ENDED, old.id, now - window - timedelta(days=1))
    await pool.execute(ENDED, leaving.id, now - window + timedelta(seconds=15))
    polling(chain)
    await chain.rpc.send(chain.payer, old.intent_address, value=1)
    paid_late = await chain.rpc.send(chain.payer, leaving.intent_address, value=2)
    gauge = {"chain": chain.name}
    async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
        await reader.wait_for(lambda ms: bool(to(leaving.intent_address)(ms)))
        watched = REGISTRY.get_sample_value("intentd_watched_addresses", gauge)
        assert watched is not None
        # Blocks keep coming (anvil stamps them with the wall clock); about a minute
        # later the cutoff has moved a sweep step past `leaving`'s end.
        deadline = time.monotonic() + 120
        while REGISTRY.get_sample_value("intentd_watched_addresses", gauge) == watched:
            assert time.monotonic() < deadline, "the intent never left the watched set"
            await chain.rpc.mine()
            await asyncio.sleep(1.0)
        assert REGISTRY.get_sample_value("intentd_watched_addresses", gauge) == watched - 1
        await chain.rpc.send(chain.payer, leaving.intent_address, value=3)  # not watched now
        await chain.rpc.send(chain.payer, live.intent_address, value=4)
        await reader.wait_for(lambda ms: bool(to(live.intent_address)(ms)))
        await reader.drain(1.0)
    assert [(d["tx_hash"], d["amount"]) for d in to(leaving.intent_address)(reader.messages)] == [
        (paid_late, 2)
    ]
    assert to(old.intent_address)(reader.messages) == []  # ended before the window
