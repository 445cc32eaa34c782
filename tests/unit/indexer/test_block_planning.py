"""Range planning: confirmation depth, next batch, log-range widths."""

from __future__ import annotations

from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.chain.blocks import BlockRange, confirmed_head
from intentd.chain.evm.log_ranges import LogRangeSizer
from intentd.indexer.planning import first_block, next_range


@pytest.mark.parametrize(
    ("latest", "confirmations", "expected"),
    [
        (100, 1, 100),  # the head itself, with itself as its one confirmation
        (100, 2, 99),
        (100, 12, 89),
        (5, 6, 0),
        (5, 7, -1),  # nothing confirmed yet
        (0, 1, 0),
        (0, 100, -1),
    ],
)
def test_confirmed_head(latest: int, confirmations: int, expected: int) -> None:
    assert confirmed_head(latest, confirmations) == expected


def test_confirmations_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        confirmed_head(10, 0)


@pytest.mark.parametrize(
    ("start", "confirmed", "expected"),
    [("latest", 50, 50), ("latest", -1, 0), (7, 50, 7), (0, 50, 0), (80, 50, 80)],
)
def test_first_block(start: int | Literal["latest"], confirmed: int, expected: int) -> None:
    assert first_block(start, confirmed) == expected


@pytest.mark.parametrize(
    ("cursor", "confirmed", "batch", "expected"),
    [
        (-1, 0, 10, BlockRange(0, 0)),
        (9, 100, 10, BlockRange(10, 19)),
        (95, 100, 10, BlockRange(96, 100)),
        (99, 100, 10, BlockRange(100, 100)),
        (100, 100, 10, None),  # caught up
        (120, 100, 10, None),  # a lagging node: wait, never go back
        (9, 100, 1, BlockRange(10, 10)),
    ],
)
def test_next_range(cursor: int, confirmed: int, batch: int, expected: BlockRange | None) -> None:
    assert next_range(cursor, confirmed, batch) == expected


@given(
    cursor=st.integers(-1, 10_000),
    ahead=st.integers(0, 5_000),
    batch=st.integers(1, 700),
)
def test_successive_ranges_cover_every_block_once(cursor: int, ahead: int, batch: int) -> None:
    confirmed = cursor + ahead
    seen: list[int] = []
    position = cursor
    while (blocks := next_range(position, confirmed, batch)) is not None:
        assert len(blocks) <= batch
        assert blocks.first == position + 1
        seen.extend(blocks)
        position = blocks.last
    assert seen == list(range(cursor + 1, confirmed + 1))


@pytest.mark.parametrize(
    ("blocks", "size", "expected"),
    [
        (BlockRange(0, 9), 5, [BlockRange(0, 4), BlockRange(5, 9)]),
        (BlockRange(0, 9), 4, [BlockRange(0, 3), BlockRange(4, 7), BlockRange(8, 9)]),
        (BlockRange(3, 3), 100, [BlockRange(3, 3)]),
    ],
)
def test_chunks(blocks: BlockRange, size: int, expected: list[BlockRange]) -> None:
    assert blocks.chunks(size) == expected


@given(first=st.integers(0, 10**9), length=st.integers(2, 10**6))
def test_halves_split_a_range_in_two_adjacent_parts(first: int, length: int) -> None:
    blocks = BlockRange(first, first + length - 1)
    low, high = blocks.halves()
    assert (low.first, high.last, low.last + 1) == (blocks.first, blocks.last, high.first)
    assert abs(len(low) - len(high)) <= 1


def test_invalid_ranges_are_refused() -> None:
    with pytest.raises(ValueError, match="not a block range"):
        BlockRange(5, 4)
    with pytest.raises(ValueError, match="one-block"):
        BlockRange(5, 5).halves()


def test_log_width_halves_on_refusal_and_grows_back_slowly() -> None:
    sizer = LogRangeSizer(2000, grow_after=2)
    sizer.refused(2000)
    assert sizer.width == 1000
    sizer.refused(1000)
    sizer.refused(500)
    assert sizer.width == 250
    sizer.succeeded(250)
    assert sizer.width == 250
    sizer.succeeded(250)
    assert sizer.width == 312  # a quarter more after two successes in a row
    sizer.succeeded(100)  # narrower queries (a batch's tail) say nothing about the width
    sizer.succeeded(100)
    assert sizer.width == 312
    sizer.refused(312)
    assert sizer.width == 156
    for _ in range(200):
        sizer.succeeded(sizer.width)
    assert sizer.width == 2000


def test_log_width_never_drops_below_one_block() -> None:
    sizer = LogRangeSizer(4)
    for _ in range(5):
        sizer.refused(1)
    assert sizer.width == 1
