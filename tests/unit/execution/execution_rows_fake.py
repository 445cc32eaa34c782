"""In-memory rows of the executor's store and the repositories over them that the
PostgreSQL store keeps in ``adapters.postgres.transaction_rows`` and
``adapters.postgres.relayer_float``:
chain transactions, signer nonces, the gas tank's credit and the relayer's float, and
the results' outbox (the actions and the store itself: ``execution_store_fake.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from intentd.domain.actions import Action, ActionKind, ActionStatus, SignerKind
from intentd.execution.float_figures import Commitments, Exposure, FloatRow
from intentd.execution.repositories import NewTx
from intentd.execution.tracking import OPEN_STATUSES, Receipt, Tx, TxStatus
from intentd.messages import ActionResultMessage

if TYPE_CHECKING:
    from tests.unit.execution.execution_store_fake import FakeStore


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
    pending: dict[str, int] = field(default_factory=dict)
    """``amount_out`` of PENDING intents to this chain, by token (there are no intents here)."""
    floats: dict[tuple[str, str], tuple[FloatRow, datetime]] = field(default_factory=dict)
    """The stored float, by (holder, token)."""


class StoreRows:
    """A repository of one :class:`~tests.unit.execution.execution_store_fake.FakeStore`."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store
        self._s = store.state


class FakeChainTransactions(StoreRows):
    async def history(self, action_id: int) -> list[Tx]:
        return self._store.transactions(action_id)

    async def record(self, tx: NewTx) -> int:
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

    async def set_status(
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


class FakeNonces(StoreRows):
    async def reconcile(self, signer: str, pending: int) -> int:
        recorded = [r.tx.nonce + 1 for r in self._s.txs.values() if r.tx.signer == signer]
        floor = max([pending, *recorded])
        self._s.nonces[signer] = max(self._s.nonces.get(signer, 0), floor)
        return self._s.nonces[signer]

    async def open_holes(self, signer: str, mined: int) -> int:
        open_nonces = {
            r.tx.nonce
            for r in self._s.txs.values()
            if r.tx.signer == signer and r.tx.status in OPEN_STATUSES
        }
        return sum(1 for n in range(mined, self._s.nonces[signer]) if n not in open_nonces)

    async def allocate(self, signer: str) -> int:
        nonce = self._s.nonces[signer]
        self._s.nonces[signer] = nonce + 1
        return nonce


class FakeFunds(StoreRows):
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
             if r.tx.signer == relayer and r.tx.status in (TxStatus.CONFIRMED, TxStatus.REVERTED)
             and r.tx.purpose.value == "transfer"),
            default=0,
        )  # fmt: skip


class FakeResults(StoreRows):
    async def add(self, result: ActionResultMessage) -> None:
        assert all(r.id != result.id for r in self._s.outbox), f"{result.id} enqueued twice"
        self._s.outbox.append(result)
