"""The poller's first load of its watched set while the API keeps creating intents.

The load reads the live intents, then the recently ended ones, then the newest ids
(which may still be in flight). Intents committed while it reads must be watched
after it, however many: before the fix the newest id was read last, so only the last
``max_gaps`` ids below it were read again, and a busy API's intents committed during
the load (more than ``max_gaps`` of them) were never watched until a restart.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from intentd.indexer.ports import IntentAddress
from intentd.indexer.watch_refresh import WatchedIntents

NOW = datetime(2026, 11, 1, tzinfo=UTC)
CREATED_DURING_LOAD = 1_500


def address(i: int) -> str:
    return f"0x{i:040x}"


class BusySource:
    """Intents 1..10 are live when the load starts; ``CREATED_DURING_LOAD`` more are
    committed while it reads the ended intents."""

    def __init__(self) -> None:
        self.live = set(range(1, 11))

    async def live_intents(self, after_id: int, limit: int) -> list[IntentAddress]:
        ids = sorted(i for i in self.live if i > after_id)[:limit]
        return [IntentAddress(i, address(i), None) for i in ids]

    async def ended_intents(
        self, after: tuple[datetime, int] | None, until: datetime | None, limit: int
    ) -> list[IntentAddress]:
        newest = max(self.live)
        self.live.update(range(newest + 1, newest + 1 + CREATED_DURING_LOAD))
        return []

    async def newest_id(self) -> int:
        return max(self.live)

    async def intent_addresses(
        self, after_id: int, also_ids: Sequence[int], limit: int
    ) -> list[IntentAddress]:
        ids = sorted(i for i in self.live if i > after_id or i in also_ids)[:limit]
        return [IntentAddress(i, address(i), None) for i in ids]


async def test_every_intent_committed_during_the_first_load_is_watched() -> None:
    source = BusySource()
    watched = WatchedIntents(source, retention=timedelta(days=30), wall_clock=lambda: NOW)
    await watched.refresh(NOW)
    missing = [i for i in sorted(source.live) if not watched.addresses.contains_hex(address(i))]
    assert missing == []
    assert len(watched.addresses) == 10 + CREATED_DURING_LOAD
