"""In-memory fakes of the lifecycle's deposit repositories (``uow.deposits``,
``uow.holds``, ``uow.watches``), on the unit of work's :class:`FakeState`.

They keep the rules the SQL of ``adapters`` keeps: a deposit is found by identity, then
by where it was seen, then by content for records without identity; a hold marks the
deposit orphaned and holds the intent's ready spending actions on its chain, released
once no deposit there is orphaned; an overdue hold is reported once; a watched deposit
stays watched until settled (or watched anew).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from tests.unit.lifecycle.lifecycle_state_fakes import OnState

from intentd.domain.deposits import Deposit, DepositKey, Disposition, RecordedDeposit, Retraction
from intentd.domain.intent import RefundReason, SignerKind
from intentd.domain.valuation import Rate
from intentd.lifecycle.repositories import OverdueHold

__all__ = ["FakeDeposits", "FakeHolds", "FakeWatches"]


class FakeDeposits(OnState):
    async def find(self, deposit: Deposit) -> RecordedDeposit | None:
        def rank(stored: RecordedDeposit) -> int | None:
            seen = stored.deposit
            if (seen.chain, seen.tx_hash, seen.token) != (
                deposit.chain,
                deposit.tx_hash,
                deposit.token,
            ):
                return None
            if seen.transfer_index is not None and seen.transfer_index == deposit.transfer_index:
                return 0
            if (seen.log_index, seen.block_hash) == (deposit.log_index, deposit.block_hash):
                return 1
            if (seen.transfer_index is None or deposit.transfer_index is None) and (
                seen.to_address,
                seen.amount,
            ) == (deposit.to_address, deposit.amount):
                return 2
            return None

        ranked = [
            (r, stored.id, stored)
            for stored in self._state.deposits.values()
            if (r := rank(stored)) is not None
        ]
        return min(ranked, key=lambda item: item[:2])[2] if ranked else None

    async def find_published(self, retraction: Retraction) -> RecordedDeposit | None:
        for stored in sorted(self._state.deposits.values(), key=lambda d: d.id):
            seen = stored.deposit
            if (seen.chain, seen.tx_hash, seen.block_hash, seen.log_index) == (
                retraction.chain,
                retraction.tx_hash,
                retraction.block_hash,
                retraction.log_index,
            ):
                return stored
        return None

    async def reconciled_in_block(self, intent_id: int, deposit: Deposit) -> list[RecordedDeposit]:
        return [
            stored
            for stored in sorted(self._state.deposits.values(), key=lambda d: d.id)
            if stored.intent_id == intent_id
            and (stored.deposit.chain, stored.deposit.block_hash, stored.deposit.to_address)
            == (deposit.chain, deposit.block_hash, deposit.to_address)
            and (stored.deposit.token, stored.deposit.from_address)
            == (deposit.token, deposit.from_address)
        ]

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
        deposits = self._state.deposits
        if revive is not None:
            before = deposits[revive]
            if before.disposition is Disposition.RETRACTED:
                deposits[revive] = RecordedDeposit(
                    revive, replace(before.deposit, **_where(deposit)), intent_id, disposition,
                    reason, rate=rate,
                )  # fmt: skip
            return revive
        for stored in deposits.values():
            seen = stored.deposit
            same_log = (seen.chain, seen.tx_hash, seen.log_index) == (
                deposit.chain,
                deposit.tx_hash,
                deposit.log_index,
            )
            if same_log or (deposit.transfer_index is not None and seen.key == deposit.key):
                raise RuntimeError(f"deposit {deposit.key} exists")
        deposit_id = len(deposits) + 1
        deposits[deposit_id] = RecordedDeposit(
            deposit_id, deposit, intent_id, disposition, reason, rate=rate
        )
        return deposit_id

    async def record_valuation(self, intent_id: int, rate: Rate) -> int:
        found = [
            stored
            for stored in self._state.deposits.values()
            if stored.intent_id == intent_id
            and stored.disposition is Disposition.CREDITED
            and stored.rate is None
        ]
        for stored in found:
            self._state.deposits[stored.id] = replace(stored, rate=rate)
        return len(found)

    async def relocate(self, recorded: RecordedDeposit, deposit: Deposit) -> None:
        stored = self._state.deposits[recorded.id]
        where = _where(deposit)
        if stored.deposit.transfer_index is not None:
            where["transfer_index"] = stored.deposit.transfer_index
        self._state.deposits[recorded.id] = replace(
            stored, deposit=replace(stored.deposit, **where), orphaned=False
        )

    async def mark_retracted(self, deposit_id: int) -> None:
        stored = self._state.deposits[deposit_id]
        self._state.deposits[deposit_id] = replace(
            stored, disposition=Disposition.RETRACTED, orphaned=False
        )


class FakeHolds(OnState):
    async def hold(self, deposit_id: int, intent_id: int, chain: str) -> int:
        stored = self._state.deposits[deposit_id]
        self._state.deposits[deposit_id] = replace(stored, orphaned=True)
        self._state.due.orphaned_at.setdefault(deposit_id, datetime.now(UTC))
        held = 0
        for action in self._state.actions_of(intent_id):
            spends = action.action.signer is SignerKind.INTENT and action.action.chain == chain
            if spends and action.status == "ready":
                action.status = "held"
                held += 1
        return held

    async def release(self, intent_id: int, chain: str) -> int:
        if self._state.orphaned(intent_id, chain):
            return 0
        released = 0
        for action in self._state.actions_of(intent_id):
            if action.action.chain == chain and action.status == "held":
                action.status = "ready"
                released += 1
        return released

    async def overdue(self, *, before: datetime) -> list[OverdueHold]:
        found = []
        due = self._state.due
        for deposit_id, since in sorted(due.orphaned_at.items()):
            stored = self._state.deposits[deposit_id]
            if since < before and deposit_id not in due.alerted and stored.orphaned:
                assert stored.intent_id is not None
                due.alerted.add(deposit_id)
                chain, tx_hash = stored.deposit.chain, stored.deposit.tx_hash
                found.append(OverdueHold(deposit_id, stored.intent_id, chain, tx_hash, since))
        return found


class FakeWatches(OnState):
    async def watch(self, key: DepositKey, *, reopen: bool) -> None:
        if reopen or key not in self._state.watched:
            self._state.watched[key] = reopen
            self._state.due.settled.pop(key, None)

    async def watched(self, chain: str, *, limit: int) -> list[RecordedDeposit]:
        found = [
            d
            for d in sorted(self._state.deposits.values(), key=lambda d: d.id)
            if d.deposit.chain == chain
            and d.key in self._state.watched
            and d.key not in self._state.due.settled
        ]
        return found[:limit]

    async def settle(self, deposit_id: int, outcome: str) -> None:
        self._state.due.settled[self._state.deposits[deposit_id].key] = outcome

    async def rewind_scan(self, intent_id: int, block_number: int) -> None:
        self._state.due.rewound.append((intent_id, block_number))


def _where(deposit: Deposit) -> dict[str, Any]:
    return {
        "block_number": deposit.block_number,
        "block_hash": deposit.block_hash,
        "block_time": deposit.block_time,
        "log_index": deposit.log_index,
        "transfer_index": deposit.transfer_index,
        "amount": deposit.amount,
    }
