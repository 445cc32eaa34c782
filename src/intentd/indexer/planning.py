"""Block-range arithmetic of the poller: what to read next, how wide a log query may be.

Everything here is pure. The poller processes blocks ``cursor + 1 .. confirmed head``
in order, in ranges of at most ``batch_size`` blocks; a range always starts right
after the cursor, so no block is ever skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BlockRange",
    "LogRangeSizer",
    "confirmed_head",
    "first_block",
    "next_range",
]


@dataclass(frozen=True, slots=True)
class BlockRange:
    """Blocks ``first .. last``, both included; never empty."""

    first: int
    last: int

    def __post_init__(self) -> None:
        if self.first < 0 or self.last < self.first:
            raise ValueError(f"not a block range: {self.first}..{self.last}")

    def __len__(self) -> int:
        return self.last - self.first + 1

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.first, self.last + 1))

    def halves(self) -> tuple[BlockRange, BlockRange]:
        """Two ranges that cover this one; the range must hold at least two blocks."""
        if len(self) < 2:
            raise ValueError(f"cannot split the one-block range {self}")
        middle = self.first + len(self) // 2 - 1
        return BlockRange(self.first, middle), BlockRange(middle + 1, self.last)

    def chunks(self, size: int) -> list[BlockRange]:
        """Consecutive ranges of at most ``size`` blocks covering this one, in order."""
        if size < 1:
            raise ValueError(f"chunk size must be positive, got {size}")
        return [
            BlockRange(start, min(start + size - 1, self.last))
            for start in range(self.first, self.last + 1, size)
        ]

    def __str__(self) -> str:
        return f"{self.first}..{self.last}"


def confirmed_head(latest: int, confirmations: int) -> int:
    """The highest block with ``confirmations`` blocks on top of it, itself included.

    -1 when the chain is not that long yet (nothing is confirmed).
    """
    if confirmations < 1:
        raise ValueError(f"confirmations must be at least 1, got {confirmations}")
    return max(latest - (confirmations - 1), -1)


def first_block(start_block: int | Literal["latest"], confirmed: int) -> int:
    """The first block a chain without a stored cursor processes."""
    if start_block == "latest":
        return max(confirmed, 0)
    return start_block


def next_range(cursor: int, confirmed: int, batch_size: int) -> BlockRange | None:
    """The blocks to process after ``cursor``: at most ``batch_size``, none past ``confirmed``.

    None when the cursor is at (or, on a lagging node, past) the confirmed head.
    """
    if batch_size < 1:
        raise ValueError(f"batch size must be positive, got {batch_size}")
    first = cursor + 1
    if first > confirmed:
        return None
    return BlockRange(first, min(first + batch_size - 1, confirmed))


class LogRangeSizer:
    """The widest ``eth_getLogs`` range worth trying, learnt from provider refusals.

    A refusal (the provider's range or result-size limit) halves the width below the
    refused range; after ``grow_after`` successes in a row at the current width it
    grows by a quarter, up to ``maximum``. So a provider limit costs a few split
    queries once, and a burst of dense blocks does not pin the width low forever.
    """

    def __init__(self, maximum: int, *, grow_after: int = 8) -> None:
        if maximum < 1 or grow_after < 1:
            raise ValueError("maximum and grow_after must be positive")
        self.maximum = maximum
        self.width = maximum
        self._grow_after = grow_after
        self._successes = 0

    def refused(self, span: int) -> None:
        """The provider refused a query over ``span`` blocks."""
        self.width = max(1, min(self.width, span // 2))
        self._successes = 0

    def succeeded(self, span: int) -> None:
        """A query over ``span`` blocks was answered."""
        if span < self.width:
            return
        self._successes += 1
        if self._successes >= self._grow_after and self.width < self.maximum:
            self.width = min(self.maximum, self.width + max(1, self.width // 4))
            self._successes = 0
