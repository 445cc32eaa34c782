"""How long an intent's address is watched: the cutoff, the sweep, and the set's contract."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.indexer.indexer_fakes import ended_page

from intentd.adapters.postgres.backfills import TERMINAL_STATUSES
from intentd.domain.status import ALLOWED_MOVES
from intentd.indexer.ports import IntentAddress
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.indexer.watched import (
    REORG_MARGIN,
    SWEEP_OVERLAP,
    SWEEP_STEP,
    is_watched,
    sweep_span,
    watch_cutoff,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
RETENTION = 30 * DAY


def address(n: int) -> str:
    return f"0x{n:040x}"


class Table:
    """An intents table: id -> terminal_at (None: live); every row visible, and counts
    what it was asked."""

    def __init__(self, rows: dict[int, datetime | None]) -> None:
        self.rows = rows
        self.queries: list[str] = []

    def _all(self) -> list[IntentAddress]:
        return [IntentAddress(i, address(i), t) for i, t in sorted(self.rows.items())]

    async def intent_addresses(
        self, after_id: int, also_ids: Sequence[int], limit: int
    ) -> list[IntentAddress]:
        self.queries.append("by id")
        return [r for r in self._all() if r.id > after_id or r.id in also_ids][:limit]

    async def live_intents(self, after_id: int, limit: int) -> list[IntentAddress]:
        self.queries.append("live")
        return [r for r in self._all() if r.terminal_at is None and r.id > after_id][:limit]

    async def ended_intents(
        self, after: tuple[datetime, int] | None, until: datetime | None, limit: int
    ) -> list[IntentAddress]:
        self.queries.append("ended" if until is None else "sweep")
        return ended_page(self._all(), after, until, limit)

    async def newest_id(self) -> int:
        return max(self.rows, default=0)


def watched_ids(watched: WatchedIntents, table: Table) -> set[int]:
    return {i for i in table.rows if watched.addresses.contains_hex(address(i))}


def test_the_cutoff_follows_the_older_of_chain_and_wall_time() -> None:
    behind = T0 - 5 * DAY  # a poller catching up: its blocks are five days old
    assert watch_cutoff(behind, T0, RETENTION) == behind - RETENTION - REORG_MARGIN
    ahead = T0 + DAY  # a chain whose clock runs ahead: the wall clock bounds it
    assert watch_cutoff(ahead, T0, RETENTION) == T0 - RETENTION - REORG_MARGIN


def test_only_an_intent_ended_after_the_cutoff_or_live_is_watched() -> None:
    assert is_watched(None, T0)
    assert is_watched(T0 + timedelta(microseconds=1), T0)
    assert not is_watched(T0, T0)
    assert is_watched(T0 - 100 * DAY, None)


def test_the_sweep_waits_for_a_step_and_reads_a_little_before_the_last_cutoff() -> None:
    assert sweep_span(None, T0) == (None, T0)
    assert sweep_span(T0, T0 + SWEEP_STEP - timedelta(seconds=1)) is None
    assert sweep_span(T0, T0 - DAY) is None  # never back
    assert sweep_span(T0, T0 + SWEEP_STEP) == (T0 - SWEEP_OVERLAP, T0 + SWEEP_STEP)


async def test_an_intent_that_ended_long_ago_is_not_watched() -> None:
    # The issue: every intent was watched by every poller forever.
    table = Table({1: T0 - 365 * DAY, 2: T0 - DAY, 3: None})
    watched = WatchedIntents(table, retention=RETENTION, wall_clock=lambda: T0)
    await watched.refresh(T0)
    assert watched_ids(watched, table) == {2, 3}
    assert "by id" in table.queries  # the newest ids, for the ids still in flight


async def test_the_first_load_reads_the_live_and_the_recent_through_their_indexes() -> None:
    rows: dict[int, datetime | None] = {i: T0 - 100 * DAY for i in range(1, 2001)}
    rows.update({2001: None, 2002: T0 - DAY})
    table = Table(rows)
    watched = WatchedIntents(table, retention=RETENTION, page=10, wall_clock=lambda: T0)
    await watched.refresh(T0)
    assert watched_ids(watched, table) == {2001, 2002}
    # 2000 old rows are not paged through: one live page, one ended page, and the newest
    # 1,000 ids (the gap tracker's reach) by id, 10 a page.
    assert table.queries.count("live") == 1
    assert table.queries.count("ended") == 1
    assert table.queries.count("by id") == 101


async def test_intents_leave_the_set_while_the_poller_runs_and_new_ones_join() -> None:
    table = Table({1: T0, 2: None})
    watched = WatchedIntents(table, retention=RETENTION, wall_clock=lambda: T0 + 365 * DAY)
    await watched.refresh(T0)
    assert watched_ids(watched, table) == {1, 2}
    table.rows[2] = T0 + DAY  # ends a day later
    table.rows[3] = None  # a new intent
    end_of_1 = T0 + RETENTION + REORG_MARGIN
    await watched.refresh(end_of_1 - timedelta(seconds=1))
    assert watched_ids(watched, table) == {1, 2, 3}
    await watched.refresh(end_of_1 + SWEEP_STEP)
    assert watched_ids(watched, table) == {2, 3}
    assert table.queries[-1] == "sweep"
    await watched.refresh(end_of_1 + DAY + SWEEP_STEP)
    assert watched_ids(watched, table) == {3}


async def test_without_a_chain_time_nothing_leaves() -> None:
    table = Table({1: T0 - 365 * DAY})
    watched = WatchedIntents(table, retention=RETENTION, wall_clock=lambda: T0)
    await watched.refresh()
    assert watched_ids(watched, table) == {1}
    await watched.refresh(T0)
    assert watched_ids(watched, table) == set()


times = st.integers(0, 120).map(lambda days: T0 + timedelta(hours=days * 12))


@given(
    ended=st.lists(st.one_of(st.none(), times), min_size=1, max_size=30),
    chain_times=st.lists(times, min_size=1, max_size=12).map(sorted),
    endings=st.lists(st.tuples(st.integers(1, 30), times), max_size=10),
    retention_days=st.integers(1, 40),
    page=st.integers(1, 7),
)
async def test_a_live_or_recently_ended_intent_is_always_watched_and_old_ones_leave(
    ended: list[datetime | None],
    chain_times: list[datetime],
    endings: list[tuple[int, datetime]],
    retention_days: int,
    page: int,
) -> None:
    # Intents end while the poller runs (a live intent ends at most once, never before
    # the chain time it is seen at: terminal_at is its transition's time).
    retention = timedelta(days=retention_days)
    wall = T0 + 200 * DAY
    table = Table(dict(enumerate(ended, start=1)))
    watched = WatchedIntents(table, retention=retention, page=page, wall_clock=lambda: wall)
    for step, chain_time in enumerate(chain_times):
        for row_id, at in endings[step :: len(chain_times)]:
            if table.rows.get(row_id, T0) is None:
                table.rows[row_id] = max(at, chain_time)
        await watched.refresh(chain_time)
        cutoff = watch_cutoff(chain_time, wall, retention)
        assert watched.cutoff is not None
        assert watched.cutoff <= cutoff
        for row_id, terminal_at in table.rows.items():
            if terminal_at is None or terminal_at > cutoff:
                assert watched.addresses.contains_hex(address(row_id)), (row_id, terminal_at)
            elif terminal_at <= cutoff - SWEEP_STEP:
                assert not watched.addresses.contains_hex(address(row_id)), (row_id, terminal_at)


def test_the_migration_and_backfill_stamp_exactly_the_statuses_without_a_move_out() -> None:
    terminal = {status.value for status, moves in ALLOWED_MOVES.items() if not moves}
    sql = (resources.files("intentd.migrations") / "0013_watch_retention.sql").read_text()
    lists = re.findall(r"status IN \(([^)]*)\)", sql)
    assert len(lists) == 1  # the trigger's
    assert {s.strip().strip("'") for s in lists[0].split(",")} == terminal
    assert set(TERMINAL_STATUSES) == terminal


@pytest.mark.parametrize("retention", [timedelta(0), -DAY])
def test_a_retention_must_be_positive(retention: timedelta) -> None:
    with pytest.raises(ValueError, match="retention"):
        WatchedIntents(Table({}), retention=retention)
