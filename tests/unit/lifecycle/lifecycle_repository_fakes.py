"""In-memory fakes of the lifecycle's other repositories (``uow.intents``,
``uow.actions``, ``uow.outbox``, ``uow.events``), on the unit of work's
:class:`FakeState` (the deposit ones: ``lifecycle_deposit_fakes.py``).

They keep the rules the SQL of ``adapters`` keeps: a save is a compare-and-set on the
intent's version; actions that spend from the intent address start ``held`` while a
deposit of the intent on their chain is orphaned; a cancel takes only a ``ready`` action;
an action result is applied once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from tests.unit.lifecycle.lifecycle_state_fakes import OnState, StoredAction

from intentd.contract.record import IntentRow
from intentd.domain.intent import ActionKind, Intent, PendingAction, RefundReason, SignerKind
from intentd.domain.status import IntentStatus
from intentd.lifecycle.repositories import ActionFacts, RefundAction

__all__ = ["FakeActions", "FakeEvents", "FakeIntents", "FakeOutbox"]


class FakeIntents(OnState):
    async def at(self, address: str) -> IntentRow | None:
        for row in self._state.intents.values():
            if row.intent_address == address.lower():
                return row
        return None

    async def lock(self, intent_id: int) -> IntentRow | None:
        return self._state.intents.get(intent_id)

    async def get(self, intent_id: int) -> IntentRow | None:
        return self._state.intents.get(intent_id)

    async def save(self, intent: Intent, *, expected_version: int) -> None:
        row = self._state.intents[intent.id]
        if row.version != expected_version:
            raise RuntimeError(f"intent {intent.id} changed while it was being updated")
        self._state.intents[intent.id] = replace(
            row,
            received=intent.received,
            funding_status=intent.funding,
            status=intent.status,
            event_sequence=intent.event_sequence,
            tx_hash=intent.tx_hash,
            relayer=intent.relayer,
            needs_relay=bool(intent.relayer),
            refunded=intent.refunded,
            total_due=intent.terms.total_due,
            amount_out=intent.terms.amount_out,
            awaiting_price=intent.awaiting_price,
            valuation=intent.valuation if intent.valuation is not None else row.valuation,
            version=row.version + 1,
        )

    async def due_for_expiry(self, now: datetime, *, limit: int, skip: Sequence[int]) -> list[int]:
        return sorted(
            row.id
            for row in self._state.intents.values()
            if row.status is IntentStatus.PENDING and row.expires_at <= now and row.id not in skip
        )[:limit]

    async def next_expiry(self) -> datetime | None:
        rows = self._state.intents.values()
        pending = [r.expires_at for r in rows if r.status is IntentStatus.PENDING]
        return min(pending, default=None)

    async def awaiting_price(self, *, limit: int) -> list[int]:
        found = [
            row.id
            for row in self._state.intents.values()
            if row.awaiting_price and row.status.value == "PENDING"
        ]
        return sorted(found)[:limit]


class FakeActions(OnState):
    async def create(
        self,
        *,
        intent_id: int,
        action: PendingAction,
        address_index: int,
        deposit_id: int | None = None,
    ) -> int:
        held = action.signer is SignerKind.INTENT and self._state.orphaned(intent_id, action.chain)
        action_id = len(self._state.actions) + 1
        self._state.actions[action_id] = StoredAction(
            action_id, intent_id, action, deposit_id, "held" if held else "ready"
        )
        return action_id

    async def cancel_deposit_refund(self, deposit_id: int) -> bool:
        return self._cancel(
            lambda a: a.deposit_id == deposit_id and a.action.kind is ActionKind.USER_REFUND
        )

    async def cancel_prefill(self, intent_id: int, *, wait: bool = True) -> bool:
        return self._cancel(
            lambda a: a.intent_id == intent_id and a.action.kind is ActionKind.PREFILL
        )

    async def refund_reasons(self, intent_id: int) -> frozenset[RefundReason]:
        return frozenset(
            a.action.reason
            for a in self._state.actions_of(intent_id)
            if a.action.kind is ActionKind.USER_REFUND and a.action.reason is not None
        )

    async def refund(self, action_id: int) -> RefundAction | None:
        found = self._state.actions.get(action_id)
        if found is None:
            return None
        return RefundAction(found.action.reason, found.action.token, found.action.amount)

    async def age(self, action_id: int) -> float:
        return 0.0

    async def facts(self, action_id: int, tx_hash: str | None) -> ActionFacts | None:
        return self._state.facts.get(action_id)

    async def mark_result_applied(self, result_id: str) -> bool:
        if result_id in self._state.applied:
            return False
        self._state.applied.add(result_id)
        return True

    async def is_own_transaction(self, chain: str, tx_hash: str) -> bool:
        return (chain, tx_hash) in self._state.own

    def _cancel(self, which: Callable[[StoredAction], bool]) -> bool:
        ready = [a for a in self._state.actions.values() if which(a) and a.status == "ready"]
        for action in ready:
            action.status = "cancelled"
        return len(ready) == 1


class FakeOutbox(OnState):
    async def add(self, *, topic: str, key: str, payload: bytes) -> None:
        self._state.outbox.append((topic, key, orjson.loads(payload)))


class FakeEvents(OnState):
    fail_prune: Exception | None = None
    """Raised by the next :meth:`prune` (then cleared)."""
    prunes = 0

    async def record(
        self,
        *,
        intent_id: int,
        client_id: UUID,
        envelope: Mapping[str, Any],
        payload: bytes,
        created_at: datetime,
    ) -> None:
        self._state.event_log.append((intent_id, client_id, orjson.loads(payload)))

    async def prune(self, *, older_than_days: int, limit: int) -> int:
        self.prunes += 1
        if self.fail_prune is not None:
            error, self.fail_prune = self.fail_prune, None
            raise error
        ages = self._state.due.event_ages
        old = [i for i, age in enumerate(ages) if age > older_than_days][:limit]
        for i in reversed(old):
            del ages[i]
        return len(old)
