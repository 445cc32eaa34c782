"""Fakes of the scans' ports (``intentd.scanning.ports``): a chain as trigger-processing
reads it, over the indexer's forkable :class:`~tests.unit.chain.chain_fakes.FakeChain`,
and trigger-processing's bookkeeping over the lifecycle's fake unit of work."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from tests.unit.lifecycle.lifecycle_chain_fakes import FakeDepositChain
from tests.unit.lifecycle.lifecycle_fakes import FakeUnitOfWork

from intentd.chain.blocks import BlockHeader, BlockRange
from intentd.chain.evm.coverage import LogsAnswer
from intentd.chain.evm.decoding import decode_headers
from intentd.contract.record import IntentRow
from intentd.domain.deposits import RecordedDeposit
from intentd.scanning.ports import ScanProgress
from intentd.settings import ChainConfig


class FakeScanChain(FakeDepositChain):
    """A node of a fake chain with the window's filtered reads, full blocks and point
    reads; counts what it is asked (``asked``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: list[str] = []

    @property
    def window(self) -> FakeScanChain:
        return self

    async def transfers_to(self, recipient: str, blocks: BlockRange) -> list[LogsAnswer]:
        self._failing()
        self.asked.append("transfers_to")
        logs = self.chain.logs(blocks.first, blocks.last, self.tokens)
        to = recipient.lower()[-40:]
        return [self.answer(blocks, [log for log in logs if log["topics"][2][-40:] == to])]

    async def token_logs(self, numbers: Sequence[int], *, anchor: int) -> list[LogsAnswer]:
        self._failing()
        self.asked.append("token_logs")
        seen = self.chain.blocks[anchor]["hash"]
        return [
            LogsAnswer(BlockRange(n, n), self.chain.logs(n, n, self.tokens), anchor, (seen, seen))
            for n in numbers
        ]

    async def headers(self, numbers: Sequence[int]) -> dict[int, BlockHeader]:
        self._failing()
        return {n: decode_headers([self.chain.blocks[n]], BlockRange(n, n))[0] for n in numbers}

    async def full_blocks(self, blocks: BlockRange) -> list[dict[str, Any]]:
        self._failing()
        self.asked.append("full_blocks")
        return [self.chain.blocks[n] for n in blocks]

    async def block_timestamp(self, number: int) -> int:
        self._failing()
        return int(self.chain.blocks[number]["timestamp"], 16)

    async def balance(self, token: str, holder: str, block: int) -> int:
        self._failing()
        to = holder.lower()[-40:]
        return sum(
            int(log["data"], 16)
            for log in self.chain.logs(0, block, [token])
            if log["topics"][2][-40:] == to
        )


class FakeScanChains:
    def __init__(self, **nodes: FakeScanChain) -> None:
        self.nodes = nodes
        self.closed = False

    def chain(self, config: ChainConfig) -> FakeScanChain:
        return self.nodes[config.name]

    async def close(self) -> None:
        self.closed = True


class FakeTriggerSession:
    def __init__(self, store: FakeTriggerStore) -> None:
        self._store = store

    @property
    def uow(self) -> FakeUnitOfWork:
        return self._store.uow

    async def intent(self, intent_id: int) -> IntentRow | None:
        return self.uow.state.intents.get(intent_id)

    async def deposits_of(self, intent_id: int) -> list[RecordedDeposit]:
        deposits = self.uow.state.deposits
        return [deposits[i] for i in sorted(deposits) if deposits[i].intent_id == intent_id]

    async def progress(self, intent_id: int) -> ScanProgress | None:
        return self._store.progress.get(intent_id)

    async def start(self, intent_id: int, chain: str, first_block: int) -> ScanProgress:
        return self._store.progress.setdefault(
            intent_id, ScanProgress(first_block, first_block - 1)
        )

    async def advance(self, intent_id: int, scanned_to: int, scanned_hash: str) -> None:
        found = self._store.progress[intent_id]
        if scanned_to >= found.scanned_to:
            self._store.progress[intent_id] = ScanProgress(
                found.first_block, scanned_to, scanned_hash
            )

    async def rewind(self, intent_id: int, block_number: int) -> ScanProgress | None:
        found = self._store.progress[intent_id]
        if found.scanned_to >= block_number:
            to = max(min(found.scanned_to, block_number - 1), found.first_block - 1)
            self._store.progress[intent_id] = ScanProgress(found.first_block, to, None)
        return self._store.progress[intent_id]


class FakeTriggerStore:
    """Trigger-processing's bookkeeping in memory; counts its sessions."""

    def __init__(self, uow: FakeUnitOfWork) -> None:
        self.uow = uow
        self.progress: dict[int, ScanProgress] = {}
        self.sessions = 0

    @asynccontextmanager
    async def session(self) -> AsyncIterator[FakeTriggerSession]:
        self.sessions += 1
        yield FakeTriggerSession(self)
