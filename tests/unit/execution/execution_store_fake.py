"""In-memory fake of the executor's store (``execution.ports.ExecutionStore``).

:class:`FakeStore` keeps the executor's rows with the semantics of the PostgreSQL
store: compare-and-set status changes along ``domain.actions.ALLOWED_MOVES``, a
nonce allocated once, results enqueued in the transaction of the change, and a
transaction rolled back when its block raises. Time is :attr:`FakeStore.now`. Its
transactions hold one fake repository per kind of row: the actions here, the others
in ``execution_rows_fake.py``; the deposits are given (:class:`FakeDeposits`).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from tests.unit.execution.execution_rows_fake import (
    ActionRow,
    FakeChainTransactions,
    FakeFunds,
    FakeNonces,
    FakeResults,
    StoreRows,
    StoreState,
)

from intentd.domain.actions import Action, ActionKind, ActionStatus, SignerKind, check_move
from intentd.execution.deposit_check import Credited
from intentd.execution.tracking import Tx

_SUBMITTED = ActionStatus.SUBMITTED
RECIPIENT = "0x" + "5a" * 20
TOKEN = "0x" + "7c" * 20


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
    """One transaction of :class:`FakeStore`: its repositories (they write the store's
    state directly; the store restores the state if the transaction's block raises)."""

    def __init__(self, store: FakeStore) -> None:
        self.actions = FakeActionQueue(store)
        self.transactions = FakeChainTransactions(store)
        self.nonces = FakeNonces(store)
        self.funds = FakeFunds(store)
        self.deposits = FakeDeposits([], None)
        self.results = FakeResults(store)


class FakeActionQueue(StoreRows):
    def _move(self, row: ActionRow, new: ActionStatus) -> None:
        check_move(row.status, new)
        row.status = new

    async def claim_ready(self) -> Action | None:
        for row in self._s.actions.values():
            if row.status is ActionStatus.READY and row.not_before <= self._store.now:
                return row.action
        return None

    async def lock(self, action_id: int, status: ActionStatus) -> Action | None:
        row = self._s.actions.get(action_id)
        return row.action if row is not None and row.status is status else None

    async def lock_row(self, action_id: int) -> None:
        return None

    async def submitted(self) -> list[tuple[Action, list[Tx]]]:
        return [
            (row.action, self._store.transactions(row.action.id))
            for row in self._s.actions.values()
            if row.status is ActionStatus.SUBMITTED
        ]

    async def age(self, action_id: int) -> float:
        return self._store.now - self._s.actions[action_id].created_at

    async def set_status(self, action_id: int, old: ActionStatus, new: ActionStatus) -> bool:
        row = self._s.actions[action_id]
        if row.status is not old:
            return False
        self._move(row, new)
        return True

    async def postpone(self, action_id: int, *, delay: float, error: str) -> None:
        row = self._s.actions[action_id]
        if row.status is ActionStatus.READY:
            row.not_before, row.last_error = self._store.now + delay, error

    async def retry(
        self, action_id: int, *, attempts: int, delay: float, error: str | None
    ) -> bool:
        row = self._s.actions[action_id]
        if row.status not in (ActionStatus.READY, ActionStatus.SUBMITTED):
            return False
        self._move(row, ActionStatus.READY)
        row.action = replace(row.action, attempts=attempts)
        row.last_error, row.not_before = error, self._store.now + delay
        return True

    async def fail(self, action_id: int, *, attempts: int, error: str) -> bool:
        row = self._s.actions[action_id]
        if row.status not in (ActionStatus.READY, ActionStatus.SUBMITTED):
            return False
        self._move(row, ActionStatus.FAILED)
        row.action = replace(row.action, attempts=attempts)
        row.last_error = error
        return True

    async def confirm(
        self, action_id: int, *, tx_hash: str, amount_sent: int, gas_cost: int
    ) -> bool:
        row = self._s.actions[action_id]
        if row.status is not ActionStatus.SUBMITTED:
            return False
        self._move(row, ActionStatus.CONFIRMED)
        row.tx_hash, row.amount_sent, row.gas_cost = tx_hash, amount_sent, gas_cost
        return True


class FakeDeposits:
    """An intent's source and credited deposits, as given (the store's: none)."""

    def __init__(self, deposits: list[Credited], source: tuple[str, str] | None) -> None:
        self.deposits = deposits
        self.source = source

    async def intent_source(self, intent_id: int) -> tuple[str, str] | None:
        return self.source

    async def credited(self, intent_id: int, chain: str) -> list[Credited]:
        return self.deposits
