"""The watched set and the refresh that keeps it current."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.chain.evm.addresses import WatchedAddresses
from intentd.indexer.ports import IntentAddress
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.indexer.watched import IntentIdTracker

A = "0x" + "ab" * 20
B = "0x" + "cd" * 20


def test_addresses_are_found_in_any_case_and_in_log_topics() -> None:
    watched = WatchedAddresses([A])
    assert watched.contains_hex(A)
    assert watched.contains_hex(A.upper().replace("0X", "0x"))
    assert watched.contains_hex("0x" + "0" * 24 + A[2:])  # a topic: 12 zero bytes, then the address
    assert not watched.contains_hex(B)
    assert len(watched) == 1


@pytest.mark.parametrize("bad", ["ab" * 20, "0x" + "ab" * 19, "0x" + "zz" * 20])
def test_malformed_addresses_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - bytes.fromhex or our own message
        WatchedAddresses([bad])


def test_ids_skipped_below_the_newest_are_asked_for_until_they_age_out() -> None:
    ids = IntentIdTracker(gap_ttl=10.0)
    ids.saw([1, 2, 5], now=0.0)
    assert (ids.last_id, ids.gaps(now=1.0)) == (5, [3, 4])
    ids.saw([4], now=2.0)
    assert ids.gaps(now=3.0) == [3]
    assert ids.gaps(now=10.0) == []  # rolled back, most likely; no longer asked for


def test_at_most_max_gaps_are_kept_the_newest() -> None:
    ids = IntentIdTracker(max_gaps=3)
    ids.saw([1, 100], now=0.0)
    assert ids.gaps(now=0.0) == [97, 98, 99]
    ids.saw([200], now=0.0)
    assert ids.gaps(now=0.0) == [197, 198, 199]


class Intents:
    """An intents table whose rows become visible at their commit time (or never)."""

    def __init__(self, commits: dict[int, float | None]) -> None:
        self.commits = commits
        self.now = 0.0
        self.queries: list[tuple[int, list[int]]] = []

    async def intent_addresses(
        self, after_id: int, also_ids: Sequence[int], limit: int
    ) -> list[IntentAddress]:
        self.queries.append((after_id, list(also_ids)))
        visible = [
            row_id
            for row_id, at in sorted(self.commits.items())
            if at is not None and at <= self.now and (row_id > after_id or row_id in also_ids)
        ]
        return [IntentAddress(row_id, f"0x{row_id:040x}", None) for row_id in visible[:limit]]


@given(
    data=st.data(),
    count=st.integers(1, 40),
    ttl=st.floats(1.0, 100.0),
)
async def test_every_intent_committed_within_the_ttl_is_watched(
    data: st.DataObject, count: int, ttl: float
) -> None:
    # id i is drawn at time i; it commits less than ttl later, or rolls back (None). The
    # poller refreshes at least every 0.25 s, and at other moments too.
    delays = data.draw(
        st.lists(st.one_of(st.none(), st.floats(0.0, ttl - 0.3)), min_size=count, max_size=count)
    )
    commits = {i + 1: (None if d is None else (i + 1) + d) for i, d in enumerate(delays)}
    periodic = [k * 0.25 for k in range(int((count + ttl) * 4) + 1)]
    extra = data.draw(st.lists(st.floats(0.0, count + ttl), max_size=30))
    refreshes = sorted([*periodic, *extra])
    table = Intents(commits)
    watched = WatchedIntents(
        table, page=data.draw(st.integers(1, 50)), clock=lambda: table.now,
        tracker=IntentIdTracker(gap_ttl=ttl),
    )  # fmt: skip
    for moment in refreshes:
        table.now = moment
        await watched.refresh()
    for row_id, at in commits.items():
        assert watched.addresses.contains_hex(f"0x{row_id:040x}") == (at is not None)


async def test_refresh_reads_only_new_rows_and_pages_through_many() -> None:
    table = Intents({i: 0.0 for i in range(1, 8)})
    watched = WatchedIntents(table, page=3, clock=lambda: table.now)
    assert await watched.refresh() == 7
    assert [after for after, _ in table.queries] == [0, 3, 6]
    table.commits[8] = 0.0
    assert await watched.refresh() == 1
    assert table.queries[-1] == (7, [])
    assert len(watched) == 8
