"""Crediting deposits to an intent: the funding rules of DESIGN.md §2, made precise.

:meth:`IntentFunding.apply_deposit` decides what one confirmed transfer to the
intent address means and changes the intent accordingly:

- a supported token other than ``tokenIn``, or any token on a chain other than the
  intent's source chain: a refund is owed (``wrong_token``);
- ``tokenIn`` on the source chain while the intent is PENDING and the block is not
  later than ``expires_at``: credited; the intent becomes FUNDED once the total is
  covered; an ``intent_funded`` event follows every credit;
- ``tokenIn`` after the intent left PENDING, or in a block after ``expires_at``:
  a refund is owed (``late_deposit``);
- a token the chain does not list: ignored (anyone can emit a fake ``Transfer``).

The caller guarantees that each deposit is applied once (unique key in the store).
:meth:`IntentFunding.retract` undoes a credit that a deep reorg removed, when
nothing irreversible happened since.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from intentd.domain.events import EventType, PendingEvent
from intentd.domain.status import FundingStatus, IntentStatus, check_move, funding_status


class Disposition(StrEnum):
    CREDITED = "credited"
    """Counted towards the intent's total."""
    REFUND_OWED = "refund_owed"
    """Not counted; the amount goes back to ``refund_address``."""
    IGNORED = "ignored"
    """A token the chain does not list; recorded, nothing else."""
    UNMATCHED = "unmatched"
    """No intent has this address (recorded so nothing is lost)."""
    RETRACTED = "retracted"
    """Its block left the canonical chain after it was recorded."""


class RefundReason(StrEnum):
    EXPIRED = "expired"
    EXCESS = "excess"
    LATE_DEPOSIT = "late_deposit"
    WRONG_TOKEN = "wrong_token"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Deposit:
    """A confirmed transfer to an intent address (addresses lowercase)."""

    chain: str
    tx_hash: str
    log_index: int
    block_number: int
    block_hash: str
    block_time: datetime
    token: str
    from_address: str
    to_address: str
    amount: int


@dataclass(frozen=True, slots=True)
class DepositDecision:
    disposition: Disposition
    reason: RefundReason | None = None


@dataclass(slots=True)
class IntentFunding:
    """The part of an intent that deposits change; records the events that follow."""

    id: int
    source_chain: str
    token_in: str
    total_due: int
    received: int
    status: IntentStatus
    funding: FundingStatus
    expires_at: datetime
    event_sequence: int
    events: list[PendingEvent] = field(default_factory=list)

    def apply_deposit(self, deposit: Deposit, *, token_supported: bool) -> DepositDecision:
        """Decide and apply one deposit; ``token_supported`` says the chain lists its token."""
        if not token_supported:
            return DepositDecision(Disposition.IGNORED)
        if deposit.chain != self.source_chain or deposit.token != self.token_in:
            return DepositDecision(Disposition.REFUND_OWED, RefundReason.WRONG_TOKEN)
        if self.status is not IntentStatus.PENDING or deposit.block_time > self.expires_at:
            return DepositDecision(Disposition.REFUND_OWED, RefundReason.LATE_DEPOSIT)
        self.received += deposit.amount
        self.funding = funding_status(self.received, self.total_due)
        if self.received >= self.total_due:
            self._move(IntentStatus.FUNDED)
        self._record(EventType.INTENT_FUNDED, deposit)
        return DepositDecision(Disposition.CREDITED)

    def retract(self, deposit: Deposit) -> bool:
        """Un-credit a credited deposit; False if the intent has moved on (alert)."""
        if self.status not in (IntentStatus.PENDING, IntentStatus.FUNDED):
            return False
        if deposit.amount > self.received:
            raise ValueError(
                f"retracting {deposit.amount} exceeds the {self.received} credited to intent "
                f"{self.id}"
            )
        self.received -= deposit.amount
        self.funding = funding_status(self.received, self.total_due)
        if self.status is IntentStatus.FUNDED and self.received < self.total_due:
            self._move(IntentStatus.PENDING)
        return True

    def shortfall(self) -> int:
        return max(self.total_due - self.received, 0)

    def excess(self) -> int:
        return max(self.received - self.total_due, 0)

    def _move(self, target: IntentStatus) -> None:
        check_move(self.status, target)
        self.status = target

    def _record(self, kind: EventType, deposit: Deposit) -> None:
        self.event_sequence += 1
        self.events.append(
            PendingEvent(
                type=kind,
                sequence=self.event_sequence,
                funding_status=self.funding,
                received=self.received,
                total=self.total_due,
                deposit=deposit,
            )
        )
