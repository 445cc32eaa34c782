"""The fake unit of work's due work: intents due for expiry, event log pruning, overdue
reorg holds and the deposits the trigger verifier watches (state in :class:`DueState`,
part of the unit's state so a transaction rolls it back too)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from intentd.domain.deposits import DepositKey, RecordedDeposit
from intentd.domain.status import IntentStatus
from intentd.lifecycle.ports import OverdueHold

if TYPE_CHECKING:
    from tests.unit.lifecycle.lifecycle_fakes import _State


@dataclass
class DueState:
    settled: dict[DepositKey, str] = field(default_factory=dict)
    """Watched deposits the verifier stopped watching, and why."""
    rewound: list[tuple[int, int]] = field(default_factory=list)
    """(intent, block) of each trigger scan rewound."""
    orphaned_at: dict[int, datetime] = field(default_factory=dict)
    alerted: set[int] = field(default_factory=set)
    """Orphaned deposits whose overdue hold was reported."""
    event_ages: list[float] = field(default_factory=list)
    """Age in days of each event in the event log (pruning deletes the old ones)."""


class DueWork:
    state: _State
    fail_prune: Exception | None = None
    """Raised by the next :meth:`prune_events` (then cleared)."""
    prunes = 0

    async def due_for_expiry(self, now: datetime, *, limit: int, skip: Sequence[int]) -> list[int]:
        return sorted(
            row.id
            for row in self.state.intents.values()
            if row.status is IntentStatus.PENDING and row.expires_at <= now and row.id not in skip
        )[:limit]

    async def next_expiry(self) -> datetime | None:
        rows = self.state.intents.values()
        pending = [r.expires_at for r in rows if r.status is IntentStatus.PENDING]
        return min(pending, default=None)

    async def prune_events(self, *, older_than_days: int, limit: int) -> int:
        self.prunes += 1
        if self.fail_prune is not None:
            error, self.fail_prune = self.fail_prune, None
            raise error
        old = [i for i, age in enumerate(self.state.due.event_ages) if age > older_than_days][
            :limit
        ]
        for i in reversed(old):
            del self.state.due.event_ages[i]
        return len(old)

    async def overdue_holds(self, *, before: datetime) -> list[OverdueHold]:
        found = []
        for deposit_id, since in sorted(self.state.due.orphaned_at.items()):
            stored = self.state.deposits[deposit_id]
            if since < before and deposit_id not in self.state.due.alerted and stored.orphaned:
                assert stored.intent_id is not None
                self.state.due.alerted.add(deposit_id)
                chain, tx_hash = stored.deposit.chain, stored.deposit.tx_hash
                found.append(OverdueHold(deposit_id, stored.intent_id, chain, tx_hash, since))
        return found

    async def watched_deposits(self, chain: str, *, limit: int) -> list[RecordedDeposit]:
        found = [
            d
            for d in sorted(self.state.deposits.values(), key=lambda d: d.id)
            if d.deposit.chain == chain
            and d.key in self.state.watched
            and d.key not in self.state.due.settled
        ]
        return found[:limit]

    async def settle_watch(self, deposit_id: int, outcome: str) -> None:
        self.state.due.settled[self.state.deposits[deposit_id].key] = outcome

    async def rewind_scan(self, intent_id: int, block_number: int) -> None:
        self.state.due.rewound.append((intent_id, block_number))
