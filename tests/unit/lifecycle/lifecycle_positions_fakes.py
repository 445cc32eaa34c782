"""An in-memory fake of :class:`~intentd.lifecycle.ports.LogPositions`."""

from __future__ import annotations

from tests.unit.lifecycle.lifecycle_fakes import FakeUnitOfWork

from intentd.domain.deposits import DepositKey, Disposition


class FakePositions:
    def __init__(
        self, uow: FakeUnitOfWork | None = None, *, cursors: dict[str, int] | None = None
    ) -> None:
        self.uow = uow
        self.applied: dict[tuple[str, int], int] = {}
        self.cursors = dict(cursors or {})
        self.addresses: list[str] = []
        self.replayed: list[str] = []
        self.calls: list[str] = []

    async def record_applied_block(self, topic: str, partition: int, block_number: int) -> None:
        self.calls.append(f"record {topic}:{partition}@{block_number}")
        self.applied[(topic, partition)] = block_number

    async def applied_block(self, topic: str, partition: int) -> int | None:
        return self.applied.get((topic, partition))

    async def poller_cursor(self, chain: str) -> int | None:
        return self.cursors.get(chain)

    async def intent_addresses(self) -> list[str]:
        return list(self.addresses)

    async def recorded_deposits(self, chain: str, first: int, last: int) -> list[DepositKey]:
        found = self.uow.state.deposits.values() if self.uow is not None else []
        return [
            d.key
            for d in found
            if d.deposit.chain == chain
            and first <= d.deposit.block_number <= last
            and d.intent_id is not None
            and d.disposition is not Disposition.RETRACTED
        ]

    async def replay_outbox(self, topic: str) -> int:
        self.replayed.append(topic)
        return 3
