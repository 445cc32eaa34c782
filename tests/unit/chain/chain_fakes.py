"""In-memory fakes of the poller's ports: a forkable chain, its reader, store, publisher."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from intentd.chain.blocks import BlockHeader, BlockRange
from intentd.chain.evm.coverage import LogsAnswer
from intentd.chain.evm.decoding import TRANSFER_TOPIC
from intentd.chain.evm.ports import RawRange
from intentd.indexer.ports import IntentAddress
from intentd.indexer.reorg import Cursor, PublishedDeposit
from intentd.messages import OutgoingMessage

USDC = "0x" + "5" * 40
FAKE_TOKEN = "0x" + "6" * 40
PAYER = "0x" + "7" * 40


def digest(*parts: object) -> str:
    return "0x" + hashlib.sha256(repr(parts).encode()).hexdigest()


def address(n: int) -> str:
    return f"0x{n:040x}"


@dataclass(frozen=True)
class Transfer:
    """A transaction: native value to ``to``, or a token ``transfer`` when ``token`` is set."""

    to: str
    amount: int
    token: str | None = None
    nonce: int = 0
    tx_type: int = 2
    status: int = 1
    """The receipt's status (a native transfer's value moves only with 1)."""

    @property
    def tx_hash(self) -> str:
        return digest("tx", self.to, self.amount, self.token, self.nonce)


@dataclass
class FakeChain:
    """Blocks 0..head; :meth:`fork` replaces the blocks above a height with a new branch."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    logs_by_block: list[list[dict[str, Any]]] = field(default_factory=list)
    receipts: dict[str, dict[str, Any]] = field(default_factory=dict)
    branch: int = 0
    block_seconds: int = 1
    """Seconds between blocks' timestamps (block 0 is at 1,700,000,000)."""

    def __post_init__(self) -> None:
        if not self.blocks:
            self.mine()

    @property
    def head(self) -> int:
        return len(self.blocks) - 1

    def mine(self, *transfers: Transfer, count: int = 1) -> None:
        for _ in range(count):
            self._mine(transfers)
            transfers = ()

    def _mine(self, transfers: Sequence[Transfer]) -> None:
        number = len(self.blocks)
        parent = self.blocks[-1]["hash"] if self.blocks else "0x" + "0" * 64
        block_hash = digest("block", self.branch, number, parent)
        txs: list[dict[str, Any]] = []
        logs: list[dict[str, Any]] = []
        for index, transfer in enumerate(transfers):
            tx = {
                "hash": transfer.tx_hash, "transactionIndex": hex(index), "from": PAYER,
                "to": transfer.token or transfer.to,
                "value": hex(0 if transfer.token else transfer.amount),
                "type": hex(transfer.tx_type),
            }  # fmt: skip
            txs.append(tx)
            self.receipts[transfer.tx_hash] = {
                "transactionHash": transfer.tx_hash, "blockHash": block_hash,
                "blockNumber": hex(number), "status": hex(transfer.status),
            }  # fmt: skip
            if transfer.token:
                log = {
                    "address": transfer.token, "blockNumber": hex(number),
                    "blockHash": block_hash, "transactionHash": transfer.tx_hash,
                    "transactionIndex": hex(index), "logIndex": hex(len(logs)),
                    "topics": [TRANSFER_TOPIC, "0x" + "0" * 24 + PAYER[2:],
                               "0x" + "0" * 24 + transfer.to[2:]],
                    "data": f"0x{transfer.amount:064x}", "removed": False,
                }  # fmt: skip
                logs.append(log)
                self.receipts[transfer.tx_hash]["logs"] = [log]
        self.blocks.append(
            {
                "number": hex(number),
                "hash": block_hash,
                "parentHash": parent,
                "timestamp": hex(1_700_000_000 + number * self.block_seconds),
                "transactions": txs,
            }
        )
        self.logs_by_block.append(logs)

    def fork(self, keep: int) -> None:
        """Drop the blocks above ``keep``; later blocks are on a new branch."""
        del self.blocks[keep + 1 :]
        del self.logs_by_block[keep + 1 :]
        self.branch += 1

    def logs(self, first: int, last: int, tokens: Iterable[str] | None = None) -> list[Any]:
        wanted = None if tokens is None else {t.lower() for t in tokens}
        return [
            log
            for n in range(first, min(last, self.head) + 1)
            for log in self.logs_by_block[n]
            if wanted is None or log["address"] in wanted
        ]


ROUTER = "0x" + "d" * 40
"""A payment router: a contract whose calls pay addresses internally."""


class ForwardingChain(FakeChain):
    """A fake chain in which contracts also credit addresses (no transaction to them):
    a contract call (a transaction to :data:`ROUTER`) that pays an address, or a credit
    outside any transaction (a chain's system credit: no trace shows it)."""

    def __init__(self) -> None:
        self.credits: dict[str, dict[str, int]] = {}  # block hash -> address -> amount
        self.calls: dict[str, tuple[str, int]] = {}  # tx hash -> (address, amount)
        super().__init__()

    def forward(self, to: str, amount: int) -> None:
        """Mine a block in which ``amount`` arrives at ``to`` outside any transaction."""
        self.mine()
        self.credits[self.blocks[-1]["hash"]] = {to: amount}

    def call(self, to: str, amount: int, nonce: int) -> Transfer:
        """Mine a block with a contract call that sends ``amount`` to ``to``; the call."""
        call = Transfer(ROUTER, amount, nonce=nonce)
        self.calls[call.tx_hash] = (to, amount)
        self.mine(call)
        return call

    def _changes(self, block: dict[str, Any], address: str) -> list[int]:
        changes = []
        for tx in block["transactions"]:
            paid = int(tx["value"], 16) if tx["to"] == address else 0
            to, amount = self.calls.get(tx["hash"], ("", 0))
            changes.append(paid + (amount if to == address else 0))
        return changes

    def balance(self, address: str, block_hash: str) -> int:
        if block_hash == "0x" + "0" * 64:
            return 0  # before the genesis block
        [number] = [n for n, b in enumerate(self.blocks) if b["hash"] == block_hash]
        total = 0
        for block in self.blocks[: number + 1]:
            total += sum(self._changes(block, address))
            total += self.credits.get(block["hash"], {}).get(address, 0)
        return total

    def trace(self, block_hash: str) -> list[dict[str, Any]]:
        """The prestate-diff trace of the block (balances before and after each tx)."""
        [block] = [b for b in self.blocks if b["hash"] == block_hash]
        paid = {tx["to"] for tx in block["transactions"]} | {to for to, _ in self.calls.values()}
        start = {a: self.balance(a, block["parentHash"]) for a in paid}
        entries = []
        for i, tx in enumerate(block["transactions"]):
            pre, post = {}, {}
            for address in sorted(paid):
                change = self._changes(block, address)[i]
                if change:
                    pre[address] = {"balance": hex(start[address])}
                    start[address] += change
                    post[address] = {"balance": hex(start[address])}
            entries.append({"txHash": tx["hash"], "result": {"pre": pre, "post": post}})
        return entries


class ForwardingState:
    """The balance reconciliation's reads (``StateReader``) over a :class:`ForwardingChain`."""

    def __init__(self, chain: ForwardingChain) -> None:
        self.chain = chain

    async def balances(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        return [self.chain.balance(address, block_hash) for address, block_hash in queries]

    async def receipts(self, tx_hashes: Sequence[str]) -> list[Mapping[str, Any]]:
        found = []
        for tx_hash in tx_hashes:
            [block] = [
                b for b in self.chain.blocks if any(t["hash"] == tx_hash for t in b["transactions"])
            ]
            found.append(
                {"status": "0x1", "gasUsed": "0x0", "effectiveGasPrice": "0x0",
                 "blockHash": block["hash"]}
            )  # fmt: skip
        return found

    async def traces(self, block_hashes: Sequence[str]) -> list[Sequence[Any] | None]:
        return [self.chain.trace(h) for h in block_hashes]


class FakeReader:
    """:class:`ChainReader` over a :class:`FakeChain`; ``before_read`` runs at each read."""

    def __init__(self, chain: FakeChain, tokens: Iterable[str] = (USDC, FAKE_TOKEN)) -> None:
        self.chain = chain
        self.tokens = list(tokens)
        self.reads: list[BlockRange] = []
        self.before_read: Callable[[BlockRange], None] | None = None
        self.between_blocks_and_logs: Callable[[BlockRange], None] | None = None
        self.receipt_calls: list[list[str]] = []

    async def latest_block(self) -> int:
        return self.chain.head

    async def read_range(self, blocks: BlockRange) -> RawRange:
        self.reads.append(blocks)
        if self.before_read is not None:
            self.before_read(blocks)
        if blocks.last > self.chain.head:
            raise LookupError(f"block {blocks.last} does not exist")
        raw = [self.chain.blocks[n] for n in blocks]
        if self.between_blocks_and_logs is not None:
            self.between_blocks_and_logs(blocks)
        logs = self.chain.logs(blocks.first, blocks.last, self.tokens)
        return RawRange(raw, [self.answer(blocks, logs)])

    def answer(self, blocks: BlockRange, logs: list[dict[str, Any]]) -> LogsAnswer:
        """``logs`` answered for ``blocks`` by a node on the chain as it is now."""
        anchor = self.chain.blocks[blocks.last]["hash"] if blocks.last <= self.chain.head else ""
        return LogsAnswer(blocks, logs, blocks.last, (anchor, anchor))

    async def block_hashes(self, numbers: Sequence[int]) -> dict[int, str | None]:
        return {
            n: (self.chain.blocks[n]["hash"] if n <= self.chain.head else None) for n in numbers
        }

    async def receipts(self, tx_hashes: Sequence[str]) -> dict[str, dict[str, Any]]:
        self.receipt_calls.append(list(tx_hashes))
        return {h: self.chain.receipts[h] for h in tx_hashes}


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
