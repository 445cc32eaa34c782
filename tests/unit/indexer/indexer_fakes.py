"""In-memory fakes of the poller's own ports: its store, publisher and address source
(the chain's fakes are ``tests/unit/chain/chain_fakes.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from intentd.chain.blocks import BlockHeader
from intentd.indexer.ports import IntentAddress
from intentd.indexer.reorg import Cursor, PublishedDeposit
from intentd.messages import OutgoingMessage


class Crash(Exception):
    """Stands for the process dying at this point."""


@dataclass
class FakeStore:
    """:class:`PollerStore` in memory, with the semantics of the PostgreSQL one."""

    window: int = 256
    cursor: Cursor | None = None
    blocks: dict[int, BlockHeader] = field(default_factory=dict)
    published: dict[tuple[int, str, int], PublishedDeposit] = field(default_factory=dict)
    crash_on_advance: int = 0  # fail this many advances (a crash after publishing)

    async def load_cursor(self) -> Cursor | None:
        return self.cursor

    async def remembered_blocks(self) -> dict[int, str]:
        return {n: b.hash for n, b in self.blocks.items()}

    async def orphans(self, after: int) -> list[PublishedDeposit]:
        return sorted(
            (p for p in self.published.values() if p.block_number > after),
            key=lambda p: (p.block_number, p.tx_hash, p.log_index),
        )

    async def advance(
        self,
        previous: Cursor,
        headers: Sequence[BlockHeader],
        published: Sequence[tuple[PublishedDeposit, bytes]],
        *,
        drop_orphans: bool,
    ) -> None:
        if self.crash_on_advance:
            self.crash_on_advance -= 1
            raise Crash("advance")
        self._check(previous)
        floor = headers[-1].number - self.window
        if drop_orphans:
            self.published = {
                k: p for k, p in self.published.items() if p.block_number <= previous.number
            }
        for header in headers:
            if header.number > floor:
                assert header.number not in self.blocks, f"block {header.number} stored twice"
                self.blocks[header.number] = header
        for deposit, payload in published:
            assert orjson.loads(payload)["tx_hash"] == deposit.tx_hash
            if deposit.block_number > floor:
                key = (deposit.block_number, deposit.tx_hash, deposit.log_index)
                assert key not in self.published, f"{key} stored twice"
                self.published[key] = deposit
        self.blocks = {n: b for n, b in self.blocks.items() if n > floor}
        self.published = {k: p for k, p in self.published.items() if p.block_number > floor}
        self.cursor = Cursor(headers[-1].number, headers[-1].hash)

    async def rewind(self, previous: Cursor, to: Cursor) -> None:
        self._check(previous)
        self.blocks = {n: b for n, b in self.blocks.items() if n <= to.number}
        self.cursor = to

    def _check(self, previous: Cursor) -> None:
        expected = None if previous.hash is None else previous
        assert self.cursor == expected, f"cursor conflict: {self.cursor} != {previous}"


@dataclass
class FakePublisher:
    messages: list[OutgoingMessage] = field(default_factory=list)
    fail_next: int = 0

    async def publish_all(self, messages: Iterable[OutgoingMessage]) -> int:
        batch = list(messages)
        if self.fail_next:
            self.fail_next -= 1
            raise Crash("publish")
        self.messages.extend(batch)
        return len(batch)

    def values(self) -> list[dict[str, Any]]:
        return [orjson.loads(m.value) for m in self.messages]


@dataclass
class FakeAddresses:
    """:class:`AddressSource` over intent addresses (id = position + 1); ``ended`` holds
    the ``terminal_at`` of the intents that ended (by address)."""

    addresses: list[str] = field(default_factory=list)
    ended: dict[str, datetime] = field(default_factory=dict)

    def _rows(self) -> list[IntentAddress]:
        return [IntentAddress(i + 1, a, self.ended.get(a)) for i, a in enumerate(self.addresses)]

    async def intent_addresses(
        self, after_id: int, also_ids: Sequence[int], limit: int
    ) -> list[IntentAddress]:
        return [r for r in self._rows() if r.id > after_id or r.id in also_ids][:limit]

    async def live_intents(self, after_id: int, limit: int) -> list[IntentAddress]:
        return [r for r in self._rows() if r.terminal_at is None and r.id > after_id][:limit]

    async def ended_intents(
        self, after: tuple[datetime, int] | None, until: datetime | None, limit: int
    ) -> list[IntentAddress]:
        return ended_page(self._rows(), after, until, limit)

    async def newest_id(self) -> int:
        return len(self.addresses)


def ended_page(
    rows: Iterable[IntentAddress],
    after: tuple[datetime, int] | None,
    until: datetime | None,
    limit: int,
) -> list[IntentAddress]:
    """What ``AddressSource.ended_intents`` answers over ``rows``."""
    ended = sorted(
        (r for r in rows if r.terminal_at is not None),
        key=lambda r: (r.terminal_at, r.id),
    )
    return [
        r
        for r in ended
        if (after is None or (r.terminal_at, r.id) > after)
        and (until is None or r.terminal_at <= until)  # type: ignore[operator]
    ][:limit]
