"""Intent and funding states, and the one table of allowed moves."""

from __future__ import annotations

from enum import StrEnum


class IntentStatus(StrEnum):
    PENDING = "PENDING"
    """Created; waiting for confirmed funds (may hold a partial amount)."""
    FUNDED = "FUNDED"
    """Confirmed deposits cover the total; the prefill is about to start."""
    INITIATED = "INITIATED"
    """Prefill transaction sent on the destination chain; ``tx_hash`` set."""
    COMPLETED = "COMPLETED"
    """Prefill confirmed; the recipient has the funds; relayer refund queued."""
    EXPIRED = "EXPIRED"
    """``expires_at`` passed while PENDING with nothing received (terminal)."""
    REFUNDING = "REFUNDING"
    """User refund under way (expired with a partial amount, or prefill failed)."""
    REFUNDED = "REFUNDED"
    """User refund confirmed (terminal)."""
    CANCELLED = "CANCELLED"
    """Cancelled by the merchant while PENDING with nothing to refund: nothing received,
    or less than the token's ``min_sweep`` (terminal)."""


class FundingStatus(StrEnum):
    NONE = "NONE"
    """Nothing of ``tokenIn`` credited."""
    UNDERFUNDED = "UNDERFUNDED"
    """Something credited, less than the total."""
    EXACT = "EXACT"
    """Exactly the total credited."""
    OVERFUNDED = "OVERFUNDED"
    """More than the total credited; the excess is refunded at initiation."""


ALLOWED_MOVES: dict[IntentStatus, frozenset[IntentStatus]] = {
    # PENDING -> CANCELLED / REFUNDING: the merchant cancels (POST .../cancel).
    IntentStatus.PENDING: frozenset(
        {
            IntentStatus.FUNDED,
            IntentStatus.EXPIRED,
            IntentStatus.REFUNDING,
            IntentStatus.CANCELLED,
        }
    ),
    # FUNDED -> PENDING only when a reorg retracts a deposit before the prefill starts;
    # FUNDED -> REFUNDING: the prefill failed, or the merchant asked for a refund while
    # the prefill had no transaction that could still be mined (POST .../refund).
    IntentStatus.FUNDED: frozenset(
        {IntentStatus.INITIATED, IntentStatus.REFUNDING, IntentStatus.PENDING}
    ),
    IntentStatus.INITIATED: frozenset({IntentStatus.COMPLETED, IntentStatus.REFUNDING}),
    IntentStatus.COMPLETED: frozenset(),
    IntentStatus.EXPIRED: frozenset(),
    IntentStatus.REFUNDING: frozenset({IntentStatus.REFUNDED}),
    IntentStatus.REFUNDED: frozenset(),
    IntentStatus.CANCELLED: frozenset(),
}


class IllegalTransition(Exception):
    """A status change the lifecycle does not allow."""

    def __init__(self, current: IntentStatus, target: IntentStatus) -> None:
        super().__init__(f"an intent cannot move from {current} to {target}")
        self.current = current
        self.target = target


def check_move(current: IntentStatus, target: IntentStatus) -> None:
    """Raise IllegalTransition unless ``current -> target`` is in ALLOWED_MOVES."""
    if target not in ALLOWED_MOVES[current]:
        raise IllegalTransition(current, target)


def funding_status(received: int, total: int) -> FundingStatus:
    """How ``received`` base units of ``tokenIn`` compare with the ``total`` due."""
    if total <= 0:
        raise ValueError(f"total due must be positive, got {total}")
    if received < 0:
        raise ValueError(f"received cannot be negative, got {received}")
    if received == 0:
        return FundingStatus.NONE
    if received < total:
        return FundingStatus.UNDERFUNDED
    if received == total:
        return FundingStatus.EXACT
    return FundingStatus.OVERFUNDED
