"""In-memory fakes of the executor's ports: a scriptable chain, its writer, a store, a
lease, and an OP-stack chain's L1 data fee oracle.

:class:`FakeChain` keeps a mempool and blocks the way a node does, as far as the
executor can tell: a transaction is identified by the keccak of its signed bytes, a
block includes pool transactions whose nonce is their sender's next one, a same-nonce
send replaces a pool transaction only with fees at least 10 % higher, and
:meth:`FakeChain.reorg` takes blocks off the top (their transactions back to the pool,
or forgotten). Tests script refusals, reverts and foreign uses of a signer's nonce.

The store's fake is in ``execution_store_fake.py`` (re-exported here).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import rlp
from eth_account import Account
from eth_utils import keccak
from tests.unit.execution.execution_store_fake import RECIPIENT, TOKEN, FakeStore

from intentd.adapters.evm.json_rpc import RpcError, RpcTransportError
from intentd.adapters.evm.signer import Keyring
from intentd.custody import IntentKeys
from intentd.domain.actions import NATIVE
from intentd.execution.evidence import BlockTx, ChainView, NonceSearch, prove_use
from intentd.execution.ports import (
    Balances,
    EstimateReverted,
    FeeInputs,
    L1FeeUnavailable,
    SendOutcome,
)
from intentd.execution.tracking import NonceUse, Receipt
from intentd.execution.tx_plans import TxPlan

__all__ = [
    "RECIPIENT",
    "TOKEN",
    "ChainTx",
    "Crash",
    "FakeChain",
    "FakeL1Fees",
    "FakeLease",
    "FakeStore",
    "FakeWriter",
    "decode",
    "keyring",
]

TEST_MNEMONIC = "test test test test test test test test test test test junk"
RELAYER_KEY = bytes.fromhex("11" * 32)
GAS_TANK_KEY = bytes.fromhex("22" * 32)


def keyring() -> Keyring:
    return Keyring(RELAYER_KEY, GAS_TANK_KEY, IntentKeys(TEST_MNEMONIC))


class Crash(Exception):
    """Stands for the process dying at this point."""


class LeaseTaken(Exception):
    """The fake lease was taken away (``adapters.postgres.lease.LeaseLost`` in production)."""


# --- the chain --------------------------------------------------------------------------


@dataclass(frozen=True)
class ChainTx:
    """A transaction as the node sees it (decoded from its signed bytes)."""

    tx_hash: str
    sender: str
    nonce: int
    to: str
    value: int
    max_fee: int
    tip: int
    raw: bytes = b""
    foreign: bool = False
    gas_limit: int = 21_000
    data: bytes = b""

    def token_transfer(self) -> tuple[str, str, int] | None:
        """(token, recipient, amount) of an ERC-20 ``transfer`` call, else None."""
        if self.data[:4] != TRANSFER_SELECTOR or len(self.data) != 68:
            return None
        return self.to, "0x" + self.data[16:36].hex(), int.from_bytes(self.data[36:68], "big")


TRANSFER_SELECTOR = bytes.fromhex("a9059cbb")
PLENTY = 10**30
"""What every holder has of everything on a chain whose balances are not tracked."""


def decode(raw: bytes) -> ChainTx:
    """An EIP-1559 transaction's fields (type 2: ``0x02 || rlp([...])``)."""
    assert raw[0] == 2, "the executor signs type-2 transactions"
    fields = rlp.decode(raw[1:])
    _chain_id, nonce, tip, max_fee, gas, to, value, data = fields[:8]
    return ChainTx(
        tx_hash="0x" + keccak(raw).hex(),
        sender=Account.recover_transaction(raw).lower(),
        nonce=int.from_bytes(nonce, "big"),
        to="0x" + to.hex(),
        value=int.from_bytes(value, "big"),
        max_fee=int.from_bytes(max_fee, "big"),
        tip=int.from_bytes(tip, "big"),
        raw=raw,
        gas_limit=int.from_bytes(gas, "big"),
        data=bytes(data),
    )


@dataclass
class FakeChain:
    """Blocks 0..head and a mempool; nothing is mined until :meth:`mine` is called."""

    base_fee: int = 10**9
    tip: int = 10**8
    blocks: list[list[ChainTx]] = field(default_factory=lambda: [[]])
    pool: dict[str, ChainTx] = field(default_factory=dict)
    reverting: set[str] = field(default_factory=set)
    """Recipients (``to``) whose transactions revert when mined."""
    refusals: deque[tuple[SendOutcome, str]] = field(default_factory=deque)
    """Answers for the next broadcasts, before any rule applies."""
    unreachable_sends: int = 0
    """Broadcasts that get no answer (``RpcTransportError``) before any rule applies."""
    crash_before_send: int = 0
    """Broadcasts the caller "dies" before making (:class:`Crash`): recorded, never sent."""
    crash_after_send: int = 0
    """Broadcasts the node takes, after which the caller "dies" (:class:`Crash`)."""
    estimate_reverts: bool = False
    contracts: set[str] = field(default_factory=set)
    broadcasts: list[bytes] = field(default_factory=list)
    """Every raw transaction sent to the node, in order (refused ones included)."""
    funds: dict[tuple[str, str], int] | None = None
    """Balances at block 0 by (holder, token; ``NATIVE`` for the coin): with them, what
    mined transactions move is tracked, an ERC-20 transfer beyond the sender's balance
    reverts its gas estimate and a native send beyond it is refused, as a node does.
    None: everyone has ``PLENTY`` of everything."""

    def balance(self, holder: str, token: str, through: int | None = None) -> int:
        """``holder``'s balance of ``token`` after block ``through`` (default: the head)."""
        if self.funds is None:
            return PLENTY
        amount = self.funds.get((holder, token), 0)
        last = self.head if through is None else through
        for number in range(1, last + 1):
            for tx in self.blocks[number]:
                receipt = self.receipt(tx.tx_hash)
                assert receipt is not None
                if tx.sender == holder and token == NATIVE:
                    amount -= receipt.gas_used * receipt.effective_gas_price
                if not receipt.succeeded:
                    continue
                if token == NATIVE:
                    amount += tx.value * ((tx.to == holder) - (tx.sender == holder))
                moved = tx.token_transfer()
                if moved is not None and moved[0] == token:
                    amount += moved[2] * ((moved[1] == holder) - (tx.sender == holder))
        return amount

    @property
    def head(self) -> int:
        return len(self.blocks) - 1

    def mined(self) -> dict[str, tuple[int, ChainTx]]:
        return {tx.tx_hash: (n, tx) for n, block in enumerate(self.blocks) for tx in block}

    def count(self, sender: str, through: int | None = None) -> int:
        """The sender's transaction count at block ``through`` (default: the head)."""
        last = self.head if through is None else through
        return sum(1 for block in self.blocks[: last + 1] for tx in block if tx.sender == sender)

    def mine(self, count: int = 1) -> None:
        """Mine ``count`` blocks, each with every pool transaction it can take."""
        for _ in range(count):
            block: list[ChainTx] = []
            self.blocks.append(block)
            progress = True
            while progress:
                progress = False
                for tx in sorted(self.pool.values(), key=lambda t: (t.sender, t.nonce)):
                    if tx.nonce == self.count(tx.sender):
                        block.append(tx)
                        del self.pool[tx.tx_hash]
                        progress = True
            stale = [h for h, tx in self.pool.items() if tx.nonce < self.count(tx.sender)]
            for tx_hash in stale:  # a nonce used by another transaction
                del self.pool[tx_hash]

    def use_nonce(self, sender: str, nonce: int) -> ChainTx:
        """Someone else (an operator with the key) sends a transaction on ``nonce``; it
        takes the place of ours in the pool and is mined in the next block."""
        foreign = ChainTx(
            tx_hash="0x" + keccak(f"foreign {sender} {nonce}".encode()).hex(),
            sender=sender, nonce=nonce, to=sender, value=0, max_fee=10**12, tip=10**11,
            foreign=True,
        )  # fmt: skip
        for tx_hash, tx in list(self.pool.items()):
            if (tx.sender, tx.nonce) == (sender, nonce):
                del self.pool[tx_hash]
        self.pool[foreign.tx_hash] = foreign
        return foreign

    def reorg(self, depth: int, *, forget: bool = False) -> None:
        """Replace the top ``depth`` blocks with empty ones at the same heights; their
        transactions go back to the pool, or are forgotten by the node."""
        taken = [tx for block in self.blocks[-depth:] for tx in block]
        self.blocks[-depth:] = [[] for _ in range(depth)]
        if not forget:
            self.pool.update((tx.tx_hash, tx) for tx in taken)

    def receipt(self, tx_hash: str) -> Receipt | None:
        found = self.mined().get(tx_hash)
        if found is None:
            return None
        number, tx = found
        gas = 21_000 if tx.to not in self.contracts and tx.value else 50_000
        return Receipt(
            tx_hash=tx_hash,
            block_number=number,
            block_hash=self.block_hash(number),
            succeeded=tx.to not in self.reverting,
            gas_used=gas,
            effective_gas_price=min(tx.max_fee, self.base_fee + tx.tip),
        )

    def block_hash(self, number: int) -> str:
        hashes = [tx.tx_hash for tx in self.blocks[number]]
        return "0x" + keccak(f"block {number} {hashes}".encode()).hex()

    def accept(self, raw: bytes) -> tuple[SendOutcome, str]:
        """What the node answers to a broadcast of ``raw`` (and what it does with it)."""
        tx = decode(raw)
        if tx.tx_hash in self.pool:
            return SendOutcome.KNOWN, "already known"
        if tx.tx_hash in self.mined() or tx.nonce < self.count(tx.sender):
            return SendOutcome.NONCE_TOO_LOW, "nonce too low"
        if tx.value + tx.gas_limit * tx.max_fee > self.balance(tx.sender, NATIVE):
            return SendOutcome.INSUFFICIENT_FUNDS, "insufficient funds for gas * price + value"
        for other in list(self.pool.values()):
            if (other.sender, other.nonce) == (tx.sender, tx.nonce):
                if tx.max_fee * 10 < other.max_fee * 11 or tx.tip * 10 < other.tip * 11:
                    return SendOutcome.UNDERPRICED, "replacement transaction underpriced"
                del self.pool[other.tx_hash]
        self.pool[tx.tx_hash] = tx
        return SendOutcome.ACCEPTED, ""


class FakeWriter:
    """The chain ports (:class:`~intentd.execution.ports.NodeReader`,
    :class:`~intentd.execution.ports.FeeOracle`,
    :class:`~intentd.execution.ports.Broadcaster`) over a :class:`FakeChain`, read
    through nodes that may lag.

    Each read (each request: a :meth:`view` is one) is answered by a node
    :attr:`behind` blocks below the chain's head: it shows that head, no receipt of a
    transaction above it, and answers a count at a block above it with "header not
    found" (:class:`~intentd.adapters.evm.json_rpc.RpcError`), as geth does. Its receipt
    index may also trail its blocks (:attr:`receipt_lag`, :attr:`hidden_receipts`).
    """

    def __init__(self, chain: FakeChain) -> None:
        self.chain = chain
        self.hidden_receipts = 0
        """Receipt reads still to answer "not in a block" for every hash (a node whose
        receipt index lags its blocks, or a lagging backend behind a load balancer)."""
        self.behind: Callable[[], int] = lambda: 0
        """How far below the head the node that answers the next read is."""
        self.receipt_lag = 0
        """Receipts of the newest blocks a node shows that its index does not have yet."""
        self.future_counts: Literal["error", "latest"] = "error"
        """What a node answers for a count at a block above its head: geth's "header not
        found", or (some providers) its newest count."""
        self.view_size = 50
        self.proofs: list[tuple[str, int, NonceUse | None]] = []
        """Every nonce use looked for: (signer, nonce, what the node proved)."""
        self.seen_head = 0
        """The highest head a node answered (``NodeReader.seen_head``)."""
        self.hung: set[str] = set()
        """Reads (``view``, ``nonce_use``) that a hung provider never answers."""

    def _height(self) -> int:
        height = max(self.chain.head - max(self.behind(), 0), 0)
        self.seen_head = max(self.seen_head, height)
        return height

    def _count(self, signer: str, block: int, height: int) -> int:
        if block > height:
            if self.future_counts == "latest":
                return self.chain.count(signer, height)
            raise RpcError("eth_getTransactionCount", -32000, "header not found")
        return self.chain.count(signer, block)

    def _receipts(self, hashes: Sequence[str], height: int) -> dict[str, Receipt | None]:
        if self.hidden_receipts:
            self.hidden_receipts -= 1
            return dict.fromkeys(hashes)
        indexed = height - self.receipt_lag
        return {
            h: r if (r := self.chain.receipt(h)) and r.block_number <= indexed else None
            for h in hashes
        }

    async def head(self) -> int:
        return self._height()

    async def fee_inputs(self) -> FeeInputs:
        return FeeInputs(self._height(), self.chain.base_fee, self.chain.tip)

    async def has_code(self, address: str) -> bool:
        return address in self.chain.contracts

    async def estimate_gas(self, sender: str, to: str, value: int, data: bytes) -> int:
        if self.chain.estimate_reverts:
            raise EstimateReverted("execution reverted")
        call = ChainTx("", sender, 0, to, value, 0, 0, data=data).token_transfer()
        self._height()  # pinned to the highest head seen (``NodeReader.seen_head``)
        if call is not None and call[2] > self.chain.balance(sender, to, self.seen_head):
            raise EstimateReverted("execution reverted: ERC20: transfer amount exceeds balance")
        return 40_000 if data else 21_000

    async def balances(self, holdings: Sequence[tuple[str, str]]) -> Balances:
        height = self._height()
        return Balances(
            block=height,
            amounts={(h, t): self.chain.balance(h, t, height) for h, t in holdings},
        )

    async def nonces(self, signers: Sequence[str], block: str) -> dict[str, int]:
        chain, height = self.chain, self._height()
        if block == "pending":  # the pool is shared; a lagging node's too
            return {
                s: chain.count(s) + sum(1 for t in chain.pool.values() if t.sender == s)
                for s in signers
            }
        through = height if block == "latest" else int(block, 16)
        return {s: self._count(s, through, height) for s in signers}

    async def _hang(self, read: str) -> None:
        if read in self.hung:
            await asyncio.Event().wait()  # no answer, ever (the client's retries go on)

    async def view(self, signers: Sequence[str], hashes: Sequence[str], block: int) -> ChainView:
        await self._hang("view")
        calls = 1 + len(signers) + len(hashes)
        assert calls <= self.view_size or len(signers) == 1, "more than one request holds"
        height = self._height()
        return ChainView(
            head=height,
            nonces={s: self._count(s, block, height) for s in signers},
            receipts=self._receipts(hashes, height),
        )

    async def nonce_use(
        self, signer: str, nonce: int, through: int, ours: Sequence[str]
    ) -> NonceUse | None:
        await self._hang("nonce_use")
        search = NonceSearch(nonce, through)
        while (probe := search.probe()) is not None:
            search.answer(probe, self._count(signer, probe, self._height()))
        block, height = search.found, self._height()  # the proof: one node's answer
        use = None
        if block is not None:
            txs = self.chain.blocks[block] if block <= height else []
            use = prove_use(
                signer,
                nonce,
                block,
                before=self._count(signer, block - 1, height),
                after=self._count(signer, block, height),
                block_hash=self.chain.block_hash(block) if block <= height else None,
                txs=[BlockTx(tx.sender, tx.nonce, tx.tx_hash) for tx in txs],
                receipts=self._receipts(ours, height),
            )
        self.proofs.append((signer, nonce, use))
        return use

    async def known(self, hashes: Sequence[str]) -> dict[str, bool]:
        height = self._height()
        mined = {h for h, (n, _) in self.chain.mined().items() if n <= height}
        return {h: h in self.chain.pool or h in mined for h in hashes}

    async def send_raw(self, raw: bytes) -> tuple[SendOutcome, str]:
        chain = self.chain
        if chain.crash_before_send:
            chain.crash_before_send -= 1
            raise Crash("before send")
        chain.broadcasts.append(raw)
        if chain.unreachable_sends:
            chain.unreachable_sends -= 1
            raise RpcTransportError("no node answered")
        if chain.refusals:
            return chain.refusals.popleft()
        answer = chain.accept(raw)
        if chain.crash_after_send:
            chain.crash_after_send -= 1
            raise Crash("after send")
        return answer


class FakeL1Fees:
    """:class:`~intentd.execution.ports.L1Fees` of an OP-stack chain: its oracle answers
    ``bound``, or gives none (``L1FeeUnavailable``) while ``bound`` is None."""

    def __init__(self, bound: int | None = None) -> None:
        self.bound = bound
        self.asked: list[TxPlan] = []
        """Every plan the executor asked about, in order."""

    async def upper_bound(self, plan: TxPlan) -> int:
        self.asked.append(plan)
        if self.bound is None:
            raise L1FeeUnavailable("GasPriceOracle.getL1FeeUpperBound: no oracle (fake)")
        return self.bound


# --- the lease --------------------------------------------------------------------------


class FakeLease:
    """:class:`~intentd.execution.ports.Lease` that is lost after ``lose_after`` checks."""

    def __init__(self, lose_after: int | None = None) -> None:
        self.lose_after = lose_after
        self.checks = 0
        self.checked = asyncio.Event()
        self.wakeup: asyncio.Event | None = None

    async def listen(self, wakeup: asyncio.Event) -> None:
        self.wakeup = wakeup

    async def check(self) -> None:
        self.checks += 1
        self.checked.set()
        if self.lose_after is not None and self.checks > self.lose_after:
            raise LeaseTaken("the fake lease was taken away")
