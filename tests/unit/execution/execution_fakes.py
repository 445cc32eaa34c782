"""In-memory fakes of the executor's ports: a scriptable chain, its writer, a store, a lease.

:class:`FakeChain` keeps a mempool and blocks the way a node does, as far as the
executor can tell: a transaction is identified by the keccak of its signed bytes, a
block includes pool transactions whose nonce is their sender's next one, a same-nonce
send replaces a pool transaction only with fees at least 10 % higher, and
:meth:`FakeChain.reorg` takes blocks off the top (their transactions back to the pool,
or forgotten). Tests script refusals, reverts and foreign uses of a signer's nonce.

:class:`FakeStore` keeps the executor's rows with the semantics of the PostgreSQL
store: compare-and-set status changes along ``domain.actions.ALLOWED_MOVES``, a
nonce allocated once, results enqueued in the transaction of the change, and a
transaction rolled back when its block raises. Time is :attr:`FakeStore.now`.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import rlp
from eth_account import Account
from eth_utils import keccak

from intentd.adapters.chain import RpcTransportError
from intentd.adapters.signer import Keyring
from intentd.custody import IntentKeys
from intentd.domain.actions import (
    Action,
    ActionKind,
    ActionStatus,
    SignerKind,
    check_move,
)
from intentd.execution.deposit_check import Credited
from intentd.execution.leader import LeadershipLost
from intentd.execution.ports import EstimateReverted, FeeInputs, NewTx, SendOutcome
from intentd.execution.tracking import OPEN_STATUSES, Receipt, Tx, TxStatus
from intentd.messages import ActionResultMessage

TEST_MNEMONIC = "test test test test test test test test test test test junk"
RELAYER_KEY = bytes.fromhex("11" * 32)
GAS_TANK_KEY = bytes.fromhex("22" * 32)
RECIPIENT = "0x" + "5a" * 20
TOKEN = "0x" + "7c" * 20


def keyring() -> Keyring:
    return Keyring(RELAYER_KEY, GAS_TANK_KEY, IntentKeys(TEST_MNEMONIC))


class Crash(Exception):
    """Stands for the process dying at this point."""


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


def decode(raw: bytes) -> ChainTx:
    """An EIP-1559 transaction's fields (type 2: ``0x02 || rlp([...])``)."""
    assert raw[0] == 2, "the executor signs type-2 transactions"
    fields = rlp.decode(raw[1:])
    _chain_id, nonce, tip, max_fee, _gas, to, value = fields[:7]
    return ChainTx(
        tx_hash="0x" + keccak(raw).hex(),
        sender=Account.recover_transaction(raw).lower(),
        nonce=int.from_bytes(nonce, "big"),
        to="0x" + to.hex(),
        value=int.from_bytes(value, "big"),
        max_fee=int.from_bytes(max_fee, "big"),
        tip=int.from_bytes(tip, "big"),
        raw=raw,
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
        for other in list(self.pool.values()):
            if (other.sender, other.nonce) == (tx.sender, tx.nonce):
                if tx.max_fee * 10 < other.max_fee * 11 or tx.tip * 10 < other.tip * 11:
                    return SendOutcome.UNDERPRICED, "replacement transaction underpriced"
                del self.pool[other.tx_hash]
        self.pool[tx.tx_hash] = tx
        return SendOutcome.ACCEPTED, ""


class FakeWriter:
    """:class:`~intentd.execution.ports.ChainWriter` over a :class:`FakeChain`."""

    def __init__(self, chain: FakeChain) -> None:
        self.chain = chain

    async def head(self) -> int:
        return self.chain.head

    async def fee_inputs(self) -> FeeInputs:
        return FeeInputs(self.chain.head, self.chain.base_fee, self.chain.tip)

    async def has_code(self, address: str) -> bool:
        return address in self.chain.contracts

    async def estimate_gas(self, sender: str, to: str, value: int, data: bytes) -> int:
        if self.chain.estimate_reverts:
            raise EstimateReverted("execution reverted")
        return 40_000 if data else 21_000

    async def nonces(self, signers: Sequence[str], block: str) -> dict[str, int]:
        chain = self.chain
        if block == "pending":
            return {
                s: chain.count(s) + sum(1 for t in chain.pool.values() if t.sender == s)
                for s in signers
            }
        through = None if block == "latest" else int(block, 16)
        return {s: chain.count(s, through) for s in signers}

    async def receipts(self, hashes: Sequence[str]) -> dict[str, Receipt | None]:
        return {h: self.chain.receipt(h) for h in hashes}

    async def known(self, hashes: Sequence[str]) -> dict[str, bool]:
        mined = self.chain.mined()
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


# --- the store --------------------------------------------------------------------------


@dataclass
class ActionRow:
    action: Action
    status: ActionStatus = ActionStatus.READY
    not_before: float = 0.0
    created_at: float = 0.0
    last_error: str | None = None
    tx_hash: str | None = None
    amount_sent: int | None = None
    gas_cost: int | None = None


@dataclass
class TxRow:
    tx: Tx
    chain: str
    updated_at: float
    sent_at: float | None = None
    receipt: Receipt | None = None


@dataclass
class StoreState:
    actions: dict[int, ActionRow] = field(default_factory=dict)
    txs: dict[int, TxRow] = field(default_factory=dict)
    nonces: dict[str, int] = field(default_factory=dict)
    outbox: list[ActionResultMessage] = field(default_factory=list)
    credited: dict[int, list[Credited]] = field(default_factory=dict)


class FakeStore:
    """:class:`~intentd.execution.ports.ExecutionStore` of one chain, in memory."""

    def __init__(self, chain: str) -> None:
        self.chain = chain
        self.now = 1_000.0
        self.state = StoreState()
        self.committed = 0

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[FakeStoreTransaction]:
        saved = copy.deepcopy(self.state)
        try:
            yield FakeStoreTransaction(self)
        except BaseException:
            self.state = saved
            raise
        self.committed += 1

    # --- test helpers -------------------------------------------------------------------
    def add_action(
        self,
        kind: ActionKind,
        *,
        token: str = TOKEN,
        amount: int = 1_000_000,
        signer: SignerKind = SignerKind.RELAYER,
        signer_index: int | None = None,
        gas_from_amount: bool = False,
        to: str = RECIPIENT,
    ) -> int:
        action_id = len(self.state.actions) + 1
        action = Action(
            id=action_id, intent_id=100 + action_id, kind=kind, chain=self.chain, token=token,
            amount=amount, to_address=to, signer_kind=signer, signer_index=signer_index,
            gas_from_amount=gas_from_amount, attempts=0,
        )  # fmt: skip
        self.state.actions[action_id] = ActionRow(action, created_at=self.now)
        return action_id

    def row(self, action_id: int) -> ActionRow:
        return self.state.actions[action_id]

    def transactions(self, action_id: int) -> list[Tx]:
        """The action's transactions, oldest first, aged by the store's clock."""
        return [
            replace(r.tx, age=self.now - r.updated_at)
            for r in self.state.txs.values()
            if r.tx.action_id == action_id
        ]

    def results(self, action_id: int) -> list[tuple[str, str | None]]:
        return [(r.event, r.tx_hash) for r in self.state.outbox if r.action_id == action_id]


class FakeStoreTransaction:
    """One transaction of :class:`FakeStore` (it writes the store's state directly; the
    store restores the state if the transaction's block raises)."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store
        self._s = store.state

    def _move(self, row: ActionRow, new: ActionStatus) -> None:
        check_move(row.status, new)
        row.status = new

    async def claim_ready(self) -> Action | None:
        for row in self._s.actions.values():
            if row.status is ActionStatus.READY and row.not_before <= self._store.now:
                return row.action
        return None

    async def lock_action(self, action_id: int, status: ActionStatus) -> Action | None:
        row = self._s.actions.get(action_id)
        return row.action if row is not None and row.status is status else None

    async def lock_action_row(self, action_id: int) -> None:
        return None

    async def submitted_actions(self) -> list[tuple[Action, list[Tx]]]:
        return [
            (row.action, self._store.transactions(row.action.id))
            for row in self._s.actions.values()
            if row.status is ActionStatus.SUBMITTED
        ]

    async def action_age(self, action_id: int) -> float:
        return self._store.now - self._s.actions[action_id].created_at

    async def set_action_status(self, action_id: int, old: ActionStatus, new: ActionStatus) -> bool:
        row = self._s.actions[action_id]
        if row.status is not old:
            return False
        self._move(row, new)
        return True

    async def postpone(self, action_id: int, *, delay: float, error: str) -> None:
        row = self._s.actions[action_id]
        if row.status is ActionStatus.READY:
            row.not_before, row.last_error = self._store.now + delay, error

    async def retry_action(
        self, action_id: int, *, attempts: int, delay: float, error: str | None
    ) -> bool:
        row = self._s.actions[action_id]
        if row.status not in (ActionStatus.READY, ActionStatus.SUBMITTED):
            return False
        self._move(row, ActionStatus.READY)
        row.action = replace(row.action, attempts=attempts)
        row.last_error, row.not_before = error, self._store.now + delay
        return True

    async def fail_action(self, action_id: int, *, attempts: int, error: str) -> bool:
        row = self._s.actions[action_id]
        if row.status not in (ActionStatus.READY, ActionStatus.SUBMITTED):
            return False
        self._move(row, ActionStatus.FAILED)
        row.action = replace(row.action, attempts=attempts)
        row.last_error = error
        return True

    async def confirm_action(
        self, action_id: int, *, tx_hash: str, amount_sent: int, gas_cost: int
    ) -> bool:
        row = self._s.actions[action_id]
        if row.status is not ActionStatus.SUBMITTED:
            return False
        self._move(row, ActionStatus.CONFIRMED)
        row.tx_hash, row.amount_sent, row.gas_cost = tx_hash, amount_sent, gas_cost
        return True

    async def gas_credit(self, action: Action, address: str) -> int | None:
        busy = any(
            r.status is ActionStatus.SUBMITTED
            and r.action.signer_kind is SignerKind.INTENT
            and r.action.signer_index == action.signer_index
            and not r.action.native
            and r.action.id != action.id
            for r in self._s.actions.values()
        )
        if busy:
            return None
        held = 0
        for r in self._s.txs.values():
            tx = r.tx
            if tx.purpose.value == "gas_topup" and tx.to == address:
                held += tx.value if tx.status is TxStatus.CONFIRMED else 0
            elif tx.signer == address and r.receipt is not None and tx.status in (
                TxStatus.CONFIRMED, TxStatus.REVERTED
            ) and not self._s.actions[tx.action_id].action.native:  # fmt: skip
                held -= r.receipt.gas_used * r.receipt.effective_gas_price
        return max(held, 0)

    async def intent_source(self, intent_id: int) -> tuple[str, str] | None:
        return None

    async def credited_deposits(self, intent_id: int, chain: str) -> list[Credited]:
        return list(self._s.credited.get(intent_id, []))

    async def history(self, action_id: int) -> list[Tx]:
        return self._store.transactions(action_id)

    async def record_transaction(self, tx: NewTx) -> int:
        tx_id = len(self._s.txs) + 1
        assert all(
            (r.tx.signer, r.tx.nonce) != (tx.signer, tx.nonce) or r.tx.action_id == tx.action_id
            for r in self._s.txs.values()
        ), f"nonce {tx.nonce} of {tx.signer} recorded for two actions"
        self._s.txs[tx_id] = TxRow(
            Tx(
                id=tx_id, action_id=tx.action_id, purpose=tx.purpose, signer=tx.signer,
                nonce=tx.nonce, tx_hash=tx.tx_hash, raw=tx.raw, to=tx.to, value=tx.value,
                gas_limit=tx.gas_limit, fees=tx.fees, status=TxStatus.SIGNED, block_number=None,
                age=0.0,
            ),
            chain=tx.chain,
            updated_at=self._store.now,
        )  # fmt: skip
        return tx_id

    def _set(self, row: TxRow, **changes: Any) -> None:
        row.tx = replace(row.tx, **changes)
        row.updated_at = self._store.now

    async def set_tx_status(
        self,
        tx_id: int,
        new: TxStatus,
        *,
        old: frozenset[TxStatus] = OPEN_STATUSES,
        receipt: Receipt | None = None,
    ) -> bool:
        row = self._s.txs[tx_id]
        if row.tx.status not in old:
            return False
        row.receipt = receipt
        self._set(row, status=new, block_number=receipt.block_number if receipt else None)
        return True

    async def mark_sent(self, tx_id: int) -> bool:
        row = self._s.txs[tx_id]
        if row.tx.status is not TxStatus.SIGNED:
            return False
        row.sent_at = self._store.now
        self._set(row, status=TxStatus.SENT)
        return True

    async def first_transfer_sent(self, action_id: int) -> bool:
        return any(
            r.tx.action_id == action_id and r.tx.purpose.value == "transfer" and r.sent_at
            for r in self._s.txs.values()
        )

    async def touch(self, tx_id: int) -> None:
        self._s.txs[tx_id].updated_at = self._store.now

    async def reconcile_nonce(self, signer: str, pending: int) -> int:
        recorded = [r.tx.nonce + 1 for r in self._s.txs.values() if r.tx.signer == signer]
        floor = max([pending, *recorded])
        self._s.nonces[signer] = max(self._s.nonces.get(signer, 0), floor)
        return self._s.nonces[signer]

    async def open_nonce_holes(self, signer: str, mined: int) -> int:
        open_nonces = {
            r.tx.nonce
            for r in self._s.txs.values()
            if r.tx.signer == signer and r.tx.status in OPEN_STATUSES
        }
        return sum(1 for n in range(mined, self._s.nonces[signer]) if n not in open_nonces)

    async def allocate_nonce(self, signer: str) -> int:
        nonce = self._s.nonces[signer]
        self._s.nonces[signer] = nonce + 1
        return nonce

    async def enqueue_result(self, result: ActionResultMessage) -> None:
        assert all(r.id != result.id for r in self._s.outbox), f"{result.id} enqueued twice"
        self._s.outbox.append(result)


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
            raise LeadershipLost("the fake lease was taken away")
