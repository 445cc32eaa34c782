"""The events the domain records, and which one ends an intent.

An intent records a :class:`PendingEvent` of an :class:`EventType` for each step of its
life; the lifecycle stores it as the public envelope (:mod:`intentd.contract.events`,
which says what each type carries). :class:`EventType` is the one list of event types:
the webhooks, the API and the documents take it from here.

Every intent that reaches a terminal status has exactly one *terminal event*
(:func:`is_terminal`), recorded in the same transaction as that status:
``intent_completed`` (COMPLETED), ``intent_expired`` (EXPIRED), ``intent_cancelled``
(CANCELLED), or ``intent_refunded`` of reason ``expired``, ``failed``, ``cancelled`` or
``merchant`` (REFUNDED). Events after it are only
``intent_refunded`` of another reason (an excess, a late or wrong-token deposit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from intentd.domain.actions import RefundReason
from intentd.domain.status import FundingStatus

if TYPE_CHECKING:
    from intentd.domain.deposits import Deposit


class EventType(StrEnum):
    INTENT_FUNDED = "intent_funded"
    """A deposit of ``tokenIn`` was credited (one per credit; covered once
    ``data.funding.shortfall`` is ``"0"``)."""
    INTENT_INITIATED = "intent_initiated"
    """The relayer's prefill is broadcast on the destination chain."""
    INTENT_COMPLETED = "intent_completed"
    """The prefill is confirmed: the recipient has the funds (terminal)."""
    INTENT_REFUNDED = "intent_refunded"
    """A refund to ``refund_address`` is confirmed (terminal for reasons ``expired``,
    ``failed``, ``cancelled`` and ``merchant``)."""
    INTENT_EXPIRED = "intent_expired"
    """``expires_at`` passed with nothing to refund: nothing received, or less than
    the token's ``min_sweep`` (terminal)."""
    INTENT_CANCELLED = "intent_cancelled"
    """The merchant cancelled the PENDING intent with nothing to refund: nothing
    received, or less than the token's ``min_sweep`` (terminal)."""


ENDING_REFUND_REASONS = frozenset(
    {RefundReason.EXPIRED, RefundReason.FAILED, RefundReason.CANCELLED, RefundReason.MERCHANT}
)
"""Refund reasons whose ``intent_refunded`` ends the intent."""


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An event the domain decided on; the envelope is built when it is stored."""

    type: EventType
    sequence: int
    funding_status: FundingStatus
    received: int
    total: int
    deposit: Deposit | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Event-specific facts (``prefill``, ``refund``), amounts in base units."""


def is_terminal(event_type: EventType | str, refund_reason: str | None = None) -> bool:
    """Whether an event of ``event_type`` (and, for a refund, ``refund_reason``) is the
    one that ends its intent."""
    if event_type in (
        EventType.INTENT_COMPLETED,
        EventType.INTENT_EXPIRED,
        EventType.INTENT_CANCELLED,
    ):
        return True
    return event_type == EventType.INTENT_REFUNDED and refund_reason in ENDING_REFUND_REASONS
