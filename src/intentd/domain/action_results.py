"""What became of an action's transaction, as the lifecycle applies it (pure).

The wire form is ``messages.ActionResultMessage`` (converted in :mod:`intentd.wire`).
"""

from __future__ import annotations

from dataclasses import dataclass

from intentd.domain.actions import ActionKind, ResultEvent

__all__ = ["ActionResult", "ResultEvent"]


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
