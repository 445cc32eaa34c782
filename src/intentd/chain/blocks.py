"""Blocks as every role sees them, whatever the family (pure): ranges, headers, heads.

A role processes blocks ``first .. last`` (:class:`BlockRange`) up to a head with
enough blocks on top (:func:`confirmed_head`); a block is known by its
:class:`BlockHeader` (height, hash, parent, time), which is what reorg checks compare.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["BlockHeader", "BlockRange", "confirmed_head"]


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


@dataclass(frozen=True, slots=True)
class BlockHeader:
    number: int
    hash: str
    parent_hash: str
    timestamp: int
