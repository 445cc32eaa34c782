"""The state the lifecycle's repository fakes share: one :class:`FakeState` per
:class:`~tests.unit.lifecycle.lifecycle_fakes.FakeUnitOfWork`, copied at the start of a
transaction and put back when it raises (so every repository rolls back together)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from intentd.contract.record import IntentRow
from intentd.domain.deposits import DepositKey, RecordedDeposit
from intentd.domain.intent import PendingAction
from intentd.lifecycle.repositories import ActionFacts


@dataclass
class StoredAction:
    id: int
    intent_id: int
    action: PendingAction
    deposit_id: int | None
    status: str
    """``ready``, ``held``, ``cancelled``, or whatever a test sets (``sent``...)."""


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


@dataclass
class FakeState:
    intents: dict[int, IntentRow] = field(default_factory=dict)
    deposits: dict[int, RecordedDeposit] = field(default_factory=dict)
    actions: dict[int, StoredAction] = field(default_factory=dict)
    outbox: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    event_log: list[tuple[int, UUID, dict[str, Any]]] = field(default_factory=list)
    applied: set[str] = field(default_factory=set)
    own: set[tuple[str, str]] = field(default_factory=set)
    watched: dict[DepositKey, bool] = field(default_factory=dict)
    """Deposits the trigger verifier watches: key -> reopened on the last call."""
    facts: dict[int, ActionFacts] = field(default_factory=dict)
    due: DueState = field(default_factory=DueState)

    def actions_of(self, intent_id: int) -> list[StoredAction]:
        return [a for a in self.actions.values() if a.intent_id == intent_id]

    def orphaned(self, intent_id: int, chain: str) -> bool:
        return any(
            d.orphaned and d.intent_id == intent_id and d.deposit.chain == chain
            for d in self.deposits.values()
        )


class Holder(Protocol):
    """The unit of work whose state the repositories share (replaced on a rollback)."""

    state: FakeState


class OnState:
    """A repository fake on the state of its unit of work."""

    def __init__(self, unit: Holder) -> None:
        self._unit = unit

    @property
    def _state(self) -> FakeState:
        return self._unit.state
