"""What became of an action's transaction, as the lifecycle applies it (pure).

The wire form is ``messages.ActionResultMessage`` (converted in :mod:`intentd.wire`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from intentd.domain.intent import ActionKind

__all__ = ["ActionResult", "ResultEvent"]


class ResultEvent(StrEnum):
    SENT = "sent"
    """First broadcast."""
    CONFIRMED = "confirmed"
    """Mined with status 1 at confirmation depth."""
    FAILED = "failed"
    """The retry policy gave up (nothing of it was mined with status 1)."""


@dataclass(frozen=True, slots=True)
class ActionResult:
    id: str
    """Unique per action and event: a result applied twice changes nothing the second time."""
    action_id: int
    intent_id: int
    kind: ActionKind
    event: ResultEvent
    chain: str
    tx_hash: str | None = None
    block_number: int | None = None
    amount_sent: int | None = None
    """Base units delivered (less than the amount when gas came out of it)."""
    gas_cost: int | None = None
    error: str | None = None
