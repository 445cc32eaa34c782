"""In-memory fakes of the lifecycle's unit of work and store (its repositories:
``lifecycle_deposit_fakes.py`` and ``lifecycle_repository_fakes.py``, on the state of
``lifecycle_state_fakes.py``; the consumer's inbox and publisher:
``lifecycle_inbox_fakes.py``; the nodes: ``lifecycle_chain_fakes.py``; builders of the
inputs: ``lifecycle_builders.py``).

:class:`FakeUnitOfWork` holds one fake of each repository over one :class:`FakeState`;
a transaction rolls every change of them back when it raises.
:class:`FakeStore` classifies failures as the PostgreSQL store does.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from tests.unit.lifecycle.lifecycle_deposit_fakes import FakeDeposits, FakeHolds, FakeWatches
from tests.unit.lifecycle.lifecycle_repository_fakes import (
    FakeActions,
    FakeEvents,
    FakeIntents,
    FakeOutbox,
)
from tests.unit.lifecycle.lifecycle_state_fakes import FakeState, StoredAction

from intentd.adapters.postgres import db_failures
from intentd.contract.record import IntentRow
from intentd.domain.deposits import DepositKey, RecordedDeposit
from intentd.lifecycle.failures import Failure

__all__ = ["FakeStore", "FakeUnitOfWork", "StoredAction"]


class FakeUnitOfWork:
    """A :class:`~intentd.lifecycle.ports.UnitOfWork` on in-memory state."""

    def __init__(self) -> None:
        self.state = FakeState()
        self.transactions = 0
        self.fail_next: Exception | None = None
        """Raised by the next :meth:`transaction` (a database error)."""
        self.intents = FakeIntents(self)
        self.deposits = FakeDeposits(self)
        self.actions = FakeActions(self)
        self.holds = FakeHolds(self)
        self.watches = FakeWatches(self)
        self.outbox = FakeOutbox(self)
        self.events = FakeEvents(self)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        self.transactions += 1
        saved = copy.deepcopy(self.state)
        try:
            yield
        except BaseException:
            self.state = saved
            raise

    # --- what tests arrange and read ----------------------------------------------------
    def add_intent(self, row: IntentRow) -> IntentRow:
        self.state.intents[row.id] = row
        return row

    def row(self, intent_id: int) -> IntentRow:
        return self.state.intents[intent_id]

    def recorded(self, key: DepositKey) -> RecordedDeposit:
        [found] = [d for d in self.state.deposits.values() if d.key == key]
        return found

    def actions_of(self, intent_id: int) -> list[StoredAction]:
        return self.state.actions_of(intent_id)

    def published(self) -> list[dict[str, Any]]:
        """The payloads of the events put in the outbox, in order."""
        return [payload for _, _, payload in self.state.outbox]

    def event_types(self) -> list[str]:
        return [str(event["type"]) for event in self.published()]


class FakeStore:
    """Lends the one :class:`FakeUnitOfWork`; the next ``unanswered`` pings fail."""

    def __init__(self, uow: FakeUnitOfWork | None = None) -> None:
        self.uow = uow or FakeUnitOfWork()
        self.unanswered = 0
        self.pings = 0

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[FakeUnitOfWork]:
        yield self.uow

    async def ping(self) -> None:
        self.pings += 1
        if self.unanswered > 0:
            self.unanswered -= 1
            raise ConnectionError("the database does not answer")

    def classify(self, exc: BaseException) -> Failure:
        return db_failures.classify(exc)

    def age_orphans(self, by: timedelta) -> None:
        """Make every orphaned deposit orphaned ``by`` longer ago."""
        orphaned_at = self.uow.state.due.orphaned_at
        for deposit_id in orphaned_at:
            orphaned_at[deposit_id] -= by
