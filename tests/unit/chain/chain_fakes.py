"""In-memory fakes of a chain: a forkable EVM chain, its reader (``ChainReader``) and state
(``StateReader``); the poller's own ports are faked in ``tests/unit/indexer/indexer_fakes.py``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from intentd.chain.blocks import BlockRange
from intentd.chain.evm.coverage import LogsAnswer
from intentd.chain.evm.decoding import TRANSFER_TOPIC
from intentd.chain.evm.ports import RawRange

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
