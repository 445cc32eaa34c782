"""An in-memory fake of :class:`~intentd.lifecycle.ports.LogProgress`: one deposits
partition whose end and committed offsets the test moves."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

PARTITION = ("unit.deposits.SOURCE", 0)


class FakeLogProgress:
    def __init__(self, *, end: int = 0, committed: int = 0) -> None:
        self.end = end
        self.committed = committed
        self.known = True
        """False: the partitions are not known yet (``ends`` is None)."""
        self.fail: Exception | None = None
        """Raised by every call while set (the brokers unreachable)."""
        self.hang = False
        """True: every call waits for ever (brokers that do not answer)."""

    async def ends(self) -> Mapping[tuple[str, int], int] | None:
        if self.hang:
            await asyncio.Event().wait()
        if self.fail is not None:
            raise self.fail
        return {PARTITION: self.end} if self.known else None

    async def applied(self, ends: Mapping[tuple[str, int], int]) -> bool:
        if self.fail is not None:
            raise self.fail
        return all(self.committed >= end for end in ends.values())
