"""What an intent is: its terms, its changing state, and the bookkeeping of its steps.

:class:`~intentd.domain.intent.Intent` applies the rules (DESIGN.md §2) on this state;
here is only what every rule relies on. Pure.

Guarantees:

- A status changes only by a move :func:`~intentd.domain.status.check_move` allows.
- Each recorded event takes the next ``event_sequence`` (per intent, from 1, no gaps)
  and carries the funding figures as they are when it is recorded.
- A refund of credited ``tokenIn`` is never more than :meth:`IntentState.held`
  (``received`` less what was already decided to go back), and adds to ``refunded``;
  so what was received always covers the refunds decided.
- An amount not moved is recorded in ``retained`` (:class:`Retained`), for the caller
  to report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from intentd.domain.actions import ActionKind, PendingAction, RefundReason, SignerKind
from intentd.domain.deposits import Deposit, Disposition
from intentd.domain.events import EventType, PendingEvent
from intentd.domain.status import FundingStatus, IntentStatus, check_move
from intentd.domain.valuation import Owed

__all__ = ["DepositDecision", "IntentState", "Retained", "Terms"]


@dataclass(frozen=True, slots=True)
class DepositDecision:
    disposition: Disposition
    reason: RefundReason | None = None


@dataclass(frozen=True, slots=True)
class Retained:
    """An amount the intent decided not to move: below the token's ``min_sweep``."""

    kind: ActionKind
    """What moving it would have been (``user_refund`` or ``fee_sweep``)."""
    chain: str
    token: str
    amount: int
    reason: RefundReason | None = None


@dataclass(frozen=True, slots=True)
class Terms:
    """What the intent promises; fixed at creation (addresses lowercase)."""

    source_chain: str
    destination_chain: str
    token_in: str
    token_out: str
    total_due: int
    """Base units of ``tokenIn`` the user must send (amount plus fees)."""
    fees: int
    """Base units of ``tokenIn`` that go to the fee account (route fee + app fee)."""
    amount_out: int
    """Base units of ``tokenOut`` the recipient gets."""
    recipient: str
    refund_address: str
    expires_at: datetime
    min_sweep: int = 0
    """Base units of ``tokenIn`` below which a refund or a fee sweep is not made (the
    source chain's token config; not stored, read from the configuration)."""
    owed: Owed | None = None
    """What the recipient is owed when ``amount`` was converted at a price: the intent
    is then revalued at each credit (:mod:`intentd.domain.valuation`); ``total_due``
    and ``amount_out`` are the figures of the last revaluation."""
    decimals_in: int = 0
    """``tokenIn``'s decimals (needed to revalue)."""
    decimals_out: int = 0
    """``tokenOut``'s decimals (needed to revalue)."""


@dataclass(slots=True)
class IntentState:
    """An intent's changing state and its bookkeeping; :class:`~intentd.domain.intent.Intent`
    adds the rules (a method per fact)."""

    id: int
    terms: Terms
    received: int
    status: IntentStatus
    funding: FundingStatus
    event_sequence: int
    tx_hash: str | None = None
    relayer: str = ""
    refunded: int = 0
    """Base units of credited ``tokenIn`` already decided to go back to the user."""
    awaiting_price: bool = False
    """A payment of a revalued intent was credited while no price could be trusted: the
    intent stays PENDING, whatever it received, until :meth:`Intent.value_awaiting
    <intentd.domain.intent.Intent.value_awaiting>`."""
    valuation: dict[str, Any] | None = None
    """What the revaluation of this step decided, if any (base units; stored with the
    intent and carried by its event as ``data.valuation``)."""
    events: list[PendingEvent] = field(default_factory=list)
    actions: list[PendingAction] = field(default_factory=list)
    retained: list[Retained] = field(default_factory=list)

    # --- bookkeeping --------------------------------------------------------------------
    def _retain(self, kind: ActionKind, amount: int, reason: RefundReason | None = None) -> None:
        terms = self.terms
        self.retained.append(Retained(kind, terms.source_chain, terms.token_in, amount, reason))

    def _refund_credit(self, amount: int, reason: RefundReason) -> None:
        """Refund ``amount`` of the credited ``tokenIn``; never more than is held."""
        if not 0 < amount <= self.held():
            raise ValueError(
                f"intent {self.id}: refunding {amount} of the {self.held()} still held"
            )
        self.refunded += amount
        self._refund(amount, reason, self.terms.source_chain, self.terms.token_in)

    def _refund(self, amount: int, reason: RefundReason, chain: str, token: str) -> None:
        self.actions.append(
            PendingAction(
                ActionKind.USER_REFUND,
                chain,
                token,
                amount,
                self.terms.refund_address,
                SignerKind.INTENT,
                reason,
            )
        )

    def _move(self, target: IntentStatus) -> None:
        check_move(self.status, target)
        self.status = target

    def _record(
        self,
        kind: EventType,
        *,
        deposit: Deposit | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.event_sequence += 1
        self.events.append(
            PendingEvent(
                type=kind,
                sequence=self.event_sequence,
                funding_status=self.funding,
                received=self.received,
                total=self.terms.total_due,
                deposit=deposit,
                extra=extra or {},
            )
        )

    def held(self) -> int:
        """Credited ``tokenIn`` still held for the user (received less refunds decided)."""
        return self.received - self.refunded

    def shortfall(self) -> int:
        return max(self.terms.total_due - self.received, 0)

    def excess(self) -> int:
        return max(self.received - self.terms.total_due, 0)
