"""Block-range arithmetic of the poller: what to read next.

Everything here is pure. The poller processes blocks ``cursor + 1 .. confirmed head``
in order, in ranges of at most ``batch_size`` blocks; a range always starts right
after the cursor, so no block is ever skipped.
"""

from __future__ import annotations

from typing import Literal

from intentd.chain.blocks import BlockRange

__all__ = ["first_block", "next_range"]


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
