"""In-memory fakes of what the lifecycle consumer reads from and writes to: an inbox
of Kafka records and a publisher of dead letters."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intentd.messages import OutgoingMessage


@dataclass
class Record:
    """What the consumer reads of a Kafka record."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class FakeInbox:
    """Hands out the batches given, one a call; once they are all out, sets ``stop``
    (the consumer finishes the batch in hand). Records what was committed."""

    def __init__(
        self, batches: Sequence[Mapping[Any, Sequence[Record]]], stop: asyncio.Event
    ) -> None:
        self._batches = list(batches)
        self._stop = stop
        self.committed: dict[Any, int] = {}

    async def getmany(self, *, timeout_ms: int) -> Mapping[Any, Sequence[Record]]:
        if not self._batches:
            self._stop.set()
            return {}
        batch = self._batches.pop(0)
        if not self._batches:
            self._stop.set()
        return batch

    async def commit(self, positions: Mapping[Any, int]) -> None:
        self.committed.update(positions)


class FakePublisher:
    def __init__(self) -> None:
        self.sent: list[OutgoingMessage] = []

    async def publish(self, message: OutgoingMessage) -> None:
        self.sent.append(message)
