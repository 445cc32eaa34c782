"""A flood of native-coin intents costs the poller reads only while they can be funded
(issue 18, item 3), and no payment is lost for it: on real PostgreSQL, the poller's
source learns that an intent ended while it runs; on anvil, a payment to an open intent
funds it and a late one to an ended intent within the watch window is still found."""

from __future__ import annotations

from datetime import datetime

import pytest
from tests.support import new_intent

from intentd.adapters.native_intents import ENDS_EVERY, PostgresOpenNativeIntents
from intentd.adapters.postgres import Pool
from intentd.indexer.open_native import AFTER_END
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.settings import NATIVE_TOKEN, Settings

pytestmark = pytest.mark.integration


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
