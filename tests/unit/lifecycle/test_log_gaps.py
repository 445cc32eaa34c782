"""Which positions are gaps in a log, and where a deposits rescan starts (pure)."""

from __future__ import annotations

import pytest

from intentd.lifecycle.log_gaps import LogGap, gap_of, rescan_from


@pytest.mark.parametrize(
    ("position", "log_start", "log_end", "skipped", "past_end"),
    [
        (5, 550, 600, 545, False),  # retention deleted 5..549 unread
        (0, 1, 1, 1, False),
        (700, 0, 600, 0, True),  # the log was truncated or recreated
    ],
)
def test_a_position_outside_the_log_is_a_gap(
    position: int, log_start: int, log_end: int, skipped: int, past_end: bool
) -> None:
    gap = gap_of("t", 2, position=position, log_start=log_start, log_end=log_end)
    assert gap == LogGap("t", 2, position, log_start, log_end)
    assert (gap.skipped, gap.past_end) == (skipped, past_end)


@pytest.mark.parametrize(("position", "log_start", "log_end"), [(5, 5, 9), (9, 5, 9), (0, 0, 0)])
def test_a_position_the_log_holds_is_not_a_gap(position: int, log_start: int, log_end: int) -> None:
    assert gap_of("t", 0, position=position, log_start=log_start, log_end=log_end) is None


@pytest.mark.parametrize(
    ("applied", "window", "first"),
    [(1_000, 256, 744), (100, 256, 0), (256, 256, 0), (7, 0, 7)],
)
def test_a_rescan_starts_a_reorg_window_below_the_applied_block(
    applied: int, window: int, first: int
) -> None:
    assert rescan_from(applied, reorg_window=window) == first
