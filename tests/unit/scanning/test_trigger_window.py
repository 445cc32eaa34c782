"""The binary search for the first block of an intent's window."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from intentd.scanning.trigger import first_block_at_or_after


@given(
    st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=300),
    st.integers(min_value=-5, max_value=15_000),
)
async def test_finds_the_first_block_not_older_than_the_time(
    steps: list[int], timestamp: int
) -> None:
    times = [sum(steps[: i + 1]) for i in range(len(steps))]  # never decreasing
    reads: list[int] = []

    async def timestamp_of(number: int) -> int:
        reads.append(number)
        return times[number]

    found = await first_block_at_or_after(timestamp, len(times) - 1, timestamp_of)
    expected = next((i for i, t in enumerate(times) if t >= timestamp), len(times))
    assert found == expected
    assert len(reads) <= len(times).bit_length() + 1
