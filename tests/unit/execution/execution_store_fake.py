"""In-memory fake of the executor's store (:class:`~intentd.execution.ports.ExecutionStore`).

:class:`FakeStore` keeps the executor's rows with the semantics of the PostgreSQL
store: compare-and-set status changes along ``domain.actions.ALLOWED_MOVES``, a
nonce allocated once, results enqueued in the transaction of the change, and a
transaction rolled back when its block raises. Time is :attr:`FakeStore.now`.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from intentd.domain.actions import Action, ActionKind, ActionStatus, SignerKind, check_move
from intentd.execution.deposit_check import Credited
from intentd.execution.ports import Commitments, Exposure, FloatRow, NewTx
from intentd.execution.tracking import OPEN_STATUSES, Receipt, Tx, TxStatus
from intentd.messages import ActionResultMessage

_SUBMITTED = ActionStatus.SUBMITTED
RECIPIENT = "0x" + "5a" * 20
TOKEN = "0x" + "7c" * 20


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
    pending: dict[str, int] = field(default_factory=dict)
    """``amount_out`` of PENDING intents to this chain, by token (there are no intents here)."""
    floats: dict[tuple[str, str], tuple[FloatRow, datetime]] = field(default_factory=dict)
    """The stored float, by (holder, token)."""


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

    async def relayer_commitments(self, relayer: str) -> Commitments:
        return Commitments(self._figures(ActionKind.PREFILL, {ActionStatus.SUBMITTED}),
                           self._newest_paid(relayer))  # fmt: skip

    async def exposure(self, relayer: str, *, overdue_after: float) -> Exposure:
        open_repayments = {ActionStatus.READY, ActionStatus.HELD, ActionStatus.SUBMITTED,
                           ActionStatus.FAILED}  # fmt: skip
        overdue: dict[str, int] = {}
        for row in self._s.actions.values():
            if (row.action.kind is ActionKind.RELAYER_REFUND and row.status in open_repayments
                    and row.created_at < self._store.now - overdue_after):  # fmt: skip
                overdue[row.action.token] = overdue.get(row.action.token, 0) + 1
        return Exposure(
            as_of=datetime.fromtimestamp(self._store.now, UTC),
            reserved=self._figures(
                ActionKind.PREFILL, {ActionStatus.READY, ActionStatus.SUBMITTED}
            ),
            owed=self._figures(ActionKind.RELAYER_REFUND, open_repayments),
            overdue=overdue,
            pending=dict(self._s.pending),
            newest_paid=self._newest_paid(relayer),
        )

    async def save_float(self, rows: Sequence[FloatRow], *, as_of: datetime) -> None:
        for row in rows:
            key = (row.holder.value, row.token)
            if key not in self._s.floats or self._s.floats[key][1] <= as_of:
                self._s.floats[key] = (row, as_of)

    def _figures(self, kind: ActionKind, statuses: set[ActionStatus]) -> dict[str, int]:
        found: dict[str, int] = {}
        for row in self._s.actions.values():
            if row.action.kind is kind and row.status in statuses:
                found[row.action.token] = found.get(row.action.token, 0) + row.action.amount
        return found

    def _newest_paid(self, relayer: str) -> int:
        return max(
            (r.tx.block_number or 0 for r in self._s.txs.values()
             if r.tx.signer == relayer and r.tx.status is TxStatus.CONFIRMED
             and r.tx.purpose.value == "transfer"),
            default=0,
        )  # fmt: skip

    async def enqueue_result(self, result: ActionResultMessage) -> None:
        assert all(r.id != result.id for r in self._s.outbox), f"{result.id} enqueued twice"
        self._s.outbox.append(result)
