"""A flood of native-coin intents costs the poller reads only while they can be funded
(issue 18, item 3), and no payment is lost for it: on real PostgreSQL, the poller's
source learns that an intent ended while it runs; on anvil, a payment to an open intent
funds it and a late one to an ended intent within the watch window is still found."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

import pytest
from tests.integration.test_reconciled_deposits import (
    Chain,
    apply_all,
    forward_data,
    native_intent,
    poll_until,
    published_to,
    recorded,
)
from tests.support import new_intent

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.native_intents import ENDS_EVERY, PostgresOpenNativeIntents
from intentd.contract.record import IntentRow
from intentd.indexer.open_native import AFTER_END
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.messages import deposits_topic
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devchain import DevChain
from intentd_dev.devinfra.anvil import start_anvil
from intentd_dev.devinfra.contracts import forwarder_artifact
from intentd_dev.devinfra.kafka_mock import create_topics

pytestmark = pytest.mark.integration

_names = itertools.count(1)


@pytest.fixture
async def chain(
    infra: dict[str, str], make_settings: Callable[..., Settings], topic_prefix: str
) -> AsyncIterator[Chain]:
    """An automining anvil of its own with the Forwarder contract, as
    test_reconciled_deposits' (pytest imports that module apart from this one's import,
    so its chain names would repeat here)."""
    number = next(_names)
    name, chain_id = f"FLOODTEST_{number}", 970_000 + number
    anvil = await asyncio.to_thread(start_anvil, chain_id)
    try:
        async with DevChain(anvil.url) as rpc:
            payer = (await rpc.accounts())[1]
            receipt = await rpc.receipt(
                await rpc.send(payer, None, data=forwarder_artifact().bytecode)
            )
            topic = deposits_topic(topic_prefix, name)
            await asyncio.to_thread(create_topics, infra["INTENTD_KAFKA_MOCK_CONTROL"], [topic], 4)
            section = {
                "chain_id": chain_id, "network": "test", "rpc_urls": [anvil.url],
                "confirmations": 1, "poll_interval": 0.1, "batch_size": 50, "start_block": 0,
                "rpc_timeout": 2.0, "relayer": infra["INTENTD_RELAYER_ADDRESS"],
            }  # fmt: skip
            base = make_settings().chains["BASE_TESTNET"].model_dump()

            def configure(**extra: Any) -> Settings:
                return make_settings(chains={name: section | extra, "BASE_TESTNET": base})

            forwarder = str(receipt["contractAddress"]).lower()
            yield Chain(name, anvil, rpc, payer, forwarder, configure(), topic, configure)
    finally:
        await asyncio.to_thread(anvil.stop)


def unix(moment: datetime) -> int:
    return int(moment.timestamp())


async def test_the_poller_source_narrows_the_window_of_an_intent_that_ends(
    pool: Pool, settings: Settings
) -> None:
    live = await new_intent(pool, settings, amount="0.01", token=NATIVE_TOKEN)
    ending = await new_intent(pool, settings, amount="0.01", token=NATIVE_TOKEN)
    now = [0.0]
    source = PostgresOpenNativeIntents(pool, "BASE_TESTNET", clock=lambda: now[0])
    await WatchedIntents(source).refresh()
    created = unix(max(live.created_at, ending.created_at))
    ours = {live.intent_address, ending.intent_address}

    async def reconciled(first: int, last: int) -> set[str]:
        return {w.address for w in await source.reconciled(first, last)} & ours

    assert await reconciled(created, created + 10) == ours
    await pool.execute("UPDATE intents SET status = 'EXPIRED' WHERE id = $1", ending.id)
    ended = unix(await pool.fetchval("SELECT terminal_at FROM intents WHERE id = $1", ending.id))
    after_end = (ended + AFTER_END + 1, ended + AFTER_END + 60)
    assert await reconciled(*after_end) == ours  # not looked again yet (once a second)
    now[0] += ENDS_EVERY
    assert await reconciled(*after_end) == {live.intent_address}
    # A block stamped before the end is still reconciled (a poller reading behind).
    assert await reconciled(created, ended) == ours
    assert await reconciled(ended + AFTER_END, ended + AFTER_END) == ours


async def set_times(pool: Pool, row: IntentRow, **minutes_ago: int) -> None:
    """Move the intent's times (created_at, expires_at, terminal_at) this many minutes
    into the past; a terminal_at makes it EXPIRED."""
    sets = [f"{name} = now() - make_interval(mins => {int(m)})" for name, m in minutes_ago.items()]
    if "terminal_at" in minutes_ago:
        sets.append("status = 'EXPIRED'")
    await pool.execute(f"UPDATE intents SET {', '.join(sets)} WHERE id = $1", row.id)


async def test_a_native_payment_funds_an_open_intent_and_late_ones_are_still_found(
    chain: Chain, pool: Pool
) -> None:
    """On anvil, with the real poller role: a payment through a contract funds an open
    intent; a direct payment to an intent that ended ten minutes ago (within the watch
    window) is published, as is a contract payment to an intent that ended after its
    block but before the poller read it (a poller behind). A contract payment to the
    intent that ended ten minutes ago is not looked for: the decision of
    docs/indexer.md, *Which intents are reconciled*."""
    rpc = chain.rpc
    opened, ended, lagging = [await native_intent(pool, chain) for _ in range(3)]
    await set_times(pool, ended, created_at=40, expires_at=20, terminal_at=10)

    async def forward(row: IntentRow, value: int) -> None:
        data = forward_data(row.intent_address)
        await rpc.receipt(await rpc.send(chain.payer, chain.forwarder, value=value, data=data))

    await forward(opened, opened.total_due)
    await rpc.receipt(await rpc.send(chain.payer, ended.intent_address, value=10**15))
    await forward(ended, 2 * 10**15)
    await forward(lagging, lagging.total_due)
    await rpc.mine(2)
    await pool.execute("UPDATE intents SET status = 'EXPIRED' WHERE id = $1", lagging.id)

    await poll_until(chain, pool)
    published = {
        row.id: await published_to(chain, row.intent_address) for row in (opened, ended, lagging)
    }
    for messages in published.values():
        await apply_all(pool, chain, messages)

    assert [(m.amount, m.log_index) for m in published[opened.id]] == [(opened.total_due, -1)]
    assert await recorded(pool, opened) == (opened.total_due, [(opened.total_due, "credited")])
    assert [m.amount for m in published[ended.id]] == [10**15]  # the direct one only
    assert await recorded(pool, ended) == (0, [(10**15, "refund_owed")])
    assert [m.amount for m in published[lagging.id]] == [lagging.total_due]
    assert await recorded(pool, lagging) == (0, [(lagging.total_due, "refund_owed")])
