"""The lifecycle's repositories on PostgreSQL (asyncpg), each on the unit's connection.

Each class implements one repository of :mod:`intentd.lifecycle.repositories` through
the modules that hold its SQL and map its rows to domain values (``intent_store``,
``lifecycle_store``, ``deposit_holds``, ``trigger_deposits``, ``action_evidence``,
``event_log``); :class:`~intentd.adapters.postgres.lifecycle_uow.PostgresUnitOfWork` holds one of
each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from intentd.adapters.postgres import (
    Connection,
    action_evidence,
    deposit_holds,
    event_log,
    intent_store,
    lifecycle_store,
    trigger_deposits,
)
from intentd.contract.record import IntentRow
from intentd.domain.deposits import Deposit, DepositKey, Disposition, RecordedDeposit, Retraction
from intentd.domain.intent import Intent, PendingAction, RefundReason
from intentd.domain.valuation import Rate
from intentd.lifecycle.repositories import ActionFacts, OverdueHold, RefundAction

__all__ = [
    "PostgresActions",
    "PostgresDeposits",
    "PostgresEvents",
    "PostgresHolds",
    "PostgresIntents",
    "PostgresOutbox",
    "PostgresWatches",
]


class _OnConnection:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn


class PostgresIntents(_OnConnection):
    async def at(self, address: str) -> IntentRow | None:
        return await intent_store.get_by_address(self.conn, address, lock=True)

    async def lock(self, intent_id: int) -> IntentRow | None:
        return await intent_store.lock_by_id(self.conn, intent_id)

    async def get(self, intent_id: int) -> IntentRow | None:
        return await intent_store.get_by_id(self.conn, intent_id)

    async def save(self, intent: Intent, *, expected_version: int) -> None:
        await intent_store.save_intent(self.conn, intent, expected_version=expected_version)

    async def due_for_expiry(self, now: datetime, *, limit: int, skip: Sequence[int]) -> list[int]:
        return await intent_store.due_for_expiry(self.conn, now, limit=limit, skip=skip)

    async def next_expiry(self) -> datetime | None:
        return await intent_store.next_expiry(self.conn)

    async def awaiting_price(self, *, limit: int) -> list[int]:
        return await intent_store.awaiting_price(self.conn, limit=limit)


class PostgresDeposits(_OnConnection):
    async def find(self, deposit: Deposit) -> RecordedDeposit | None:
        return await lifecycle_store.find_deposit(self.conn, deposit, lock=True)

    async def find_published(self, retraction: Retraction) -> RecordedDeposit | None:
        return await lifecycle_store.find_published(self.conn, retraction)

    async def reconciled_in_block(self, intent_id: int, deposit: Deposit) -> list[RecordedDeposit]:
        return await lifecycle_store.reconciled_in_block(self.conn, intent_id, deposit)

    async def record(
        self,
        deposit: Deposit,
        *,
        intent_id: int | None,
        disposition: Disposition,
        reason: RefundReason | None,
        revive: int | None = None,
        rate: Rate | None = None,
    ) -> int:
        return await lifecycle_store.record_deposit(
            self.conn,
            deposit,
            intent_id=intent_id,
            disposition=disposition,
            reason=reason,
            revive=revive,
            rate=rate,
        )

    async def record_valuation(self, intent_id: int, rate: Rate) -> int:
        return await lifecycle_store.record_valuation(self.conn, intent_id, rate)

    async def relocate(self, recorded: RecordedDeposit, deposit: Deposit) -> None:
        await lifecycle_store.relocate(self.conn, recorded, deposit)

    async def mark_retracted(self, deposit_id: int) -> None:
        await lifecycle_store.mark_retracted(self.conn, deposit_id)


class PostgresActions(_OnConnection):
    async def create(
        self,
        *,
        intent_id: int,
        action: PendingAction,
        address_index: int,
        deposit_id: int | None = None,
    ) -> int:
        return await lifecycle_store.create_action(
            self.conn,
            intent_id=intent_id,
            action=action,
            address_index=address_index,
            deposit_id=deposit_id,
        )

    async def cancel_deposit_refund(self, deposit_id: int) -> bool:
        return await lifecycle_store.cancel_deposit_refund(self.conn, deposit_id)

    async def cancel_prefill(self, intent_id: int, *, wait: bool = True) -> bool:
        return await lifecycle_store.cancel_prefill(self.conn, intent_id, wait=wait)

    async def refund_reasons(self, intent_id: int) -> frozenset[RefundReason]:
        return await lifecycle_store.refund_reasons(self.conn, intent_id)

    async def refund(self, action_id: int) -> RefundAction | None:
        found = await lifecycle_store.action_reason(self.conn, action_id)
        if found is None:
            return None
        reason, token, amount = found
        return RefundAction(RefundReason(reason) if reason is not None else None, token, amount)

    async def age(self, action_id: int) -> float:
        return await lifecycle_store.action_age(self.conn, action_id)

    async def facts(self, action_id: int, tx_hash: str | None) -> ActionFacts | None:
        return await action_evidence.facts(self.conn, action_id, tx_hash)

    async def mark_result_applied(self, result_id: str) -> bool:
        return await lifecycle_store.mark_result_applied(self.conn, result_id)

    async def is_own_transaction(self, chain: str, tx_hash: str) -> bool:
        return await lifecycle_store.is_own_transaction(self.conn, chain, tx_hash)


class PostgresHolds(_OnConnection):
    async def hold(self, deposit_id: int, intent_id: int, chain: str) -> int:
        return await deposit_holds.hold(self.conn, deposit_id, intent_id, chain)

    async def release(self, intent_id: int, chain: str) -> int:
        return await deposit_holds.release(self.conn, intent_id, chain)

    async def overdue(self, *, before: datetime) -> list[OverdueHold]:
        return await deposit_holds.overdue(self.conn, before=before)


class PostgresWatches(_OnConnection):
    async def watch(self, key: DepositKey, *, reopen: bool) -> None:
        await trigger_deposits.remember(self.conn, key, reopen=reopen)

    async def watched(self, chain: str, *, limit: int) -> list[RecordedDeposit]:
        return await trigger_deposits.open_deposits(self.conn, chain, limit=limit)

    async def settle(self, deposit_id: int, outcome: str) -> None:
        await trigger_deposits.settle(self.conn, deposit_id, outcome)

    async def rewind_scan(self, intent_id: int, block_number: int) -> None:
        await trigger_deposits.rewind_scan(self.conn, intent_id, block_number)


class PostgresOutbox(_OnConnection):
    async def add(self, *, topic: str, key: str, payload: bytes) -> None:
        await lifecycle_store.enqueue(self.conn, topic=topic, key=key, payload=payload)


class PostgresEvents(_OnConnection):
    async def record(
        self,
        *,
        intent_id: int,
        client_id: UUID,
        envelope: Mapping[str, Any],
        payload: bytes,
        created_at: datetime,
    ) -> None:
        await event_log.record(
            self.conn,
            intent_id=intent_id,
            client_id=client_id,
            envelope=envelope,
            payload=payload,
            created_at=created_at,
        )

    async def prune(self, *, older_than_days: int, limit: int) -> int:
        return await event_log.prune(self.conn, older_than_days=older_than_days, limit=limit)
