"""Refund approval: when a refund waits for a second person, and who may approve it (pure).

A client's threshold is a USD amount (``client_policies``, else
``console.refund_approval_above_usd``; None: no approval). A refund, or a cancel that
refunds, whose value is above it waits for approval; so does one whose value cannot
be told (no quote and no price): money is never let go on the absence of evidence.
The value is that of what the intent holds, at the intent's own quote
(``total_in_usd / total_due``), else at the token's configured price.

An approval executes only while pending and not expired, by a user other than the
one who asked (a key's request is approved by a user), and only if the intent holds no
more than the amount that was approved: a payment credited meanwhile makes the refund
larger than what the approver saw, and is asked for again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum

__all__ = [
    "ApprovalRefusal",
    "ApprovalStatus",
    "PendingApproval",
    "approval_refusal",
    "needs_approval",
    "refund_value_usd",
]


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    """Waiting for a second user (until ``expires_at``)."""
    EXECUTED = "executed"
    """Approved, and the command ran in the approval's transaction."""
    REJECTED = "rejected"
    EXPIRED = "expired"
    """Nobody decided before ``expires_at``; nothing was refunded."""
    FAILED = "failed"
    """Approved, but the intent no longer allowed the command (``outcome`` says why);
    nothing was refunded."""


class ApprovalRefusal(StrEnum):
    NOT_PENDING = "approval_not_pending"
    EXPIRED = "approval_expired"
    OWN_REQUEST = "approval_own_request"
    AMOUNT_CHANGED = "approval_amount_changed"


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """What the decision needs of a stored approval."""

    status: ApprovalStatus
    expires_at: datetime
    requested_by_id: str
    amount: int
    """Base units the intent held when it was asked."""


def refund_value_usd(
    amount: int,
    *,
    total_due: int,
    total_in_usd: Decimal | None,
    unit_price: Decimal | None,
    decimals: int,
) -> Decimal | None:
    """The USD value of ``amount`` base units of an intent's asset token; None if unknown."""
    if amount == 0:
        return Decimal(0)
    if total_in_usd is not None and total_due > 0:
        return Decimal(amount) * total_in_usd / Decimal(total_due)
    if unit_price is not None:
        return Decimal(amount) * unit_price / (Decimal(10) ** decimals)
    return None


def needs_approval(threshold_usd: Decimal | None, value_usd: Decimal | None) -> bool:
    if threshold_usd is None:
        return False
    if value_usd is None:
        return True
    return value_usd > threshold_usd


def approval_refusal(
    approval: PendingApproval, *, approver_id: str, held_now: int, now: datetime
) -> ApprovalRefusal | None:
    """Why ``approver_id`` cannot have ``approval`` executed now (None: it can)."""
    if approval.status is not ApprovalStatus.PENDING:
        return ApprovalRefusal.NOT_PENDING
    if now >= approval.expires_at:
        return ApprovalRefusal.EXPIRED
    if approver_id == approval.requested_by_id:
        return ApprovalRefusal.OWN_REQUEST
    if held_now > approval.amount:
        return ApprovalRefusal.AMOUNT_CHANGED
    return None
