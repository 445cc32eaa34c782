"""An action: money the service moves on one chain, defined once.

The lifecycle *decides* an action (:class:`PendingAction`, recorded with the intent's
state change); the executor of the action's chain *performs* the stored row
(:class:`Action`). Both use the same kinds, signers and reasons, and the stored row
moves through :class:`ActionStatus` only along :data:`ALLOWED_MOVES`; every writer
of an action's status (executor, lifecycle, deposit holds) makes one of these moves
as a compare-and-set, and :func:`check_move` refuses any other.

The strings are the stored and wire values (``actions.kind``, ``actions.signer_kind``,
``actions.status``, ``ActionResultMessage.action_kind`` and ``event``); they never
change meaning.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "ALLOWED_MOVES",
    "INITIAL_STATUSES",
    "NATIVE",
    "Action",
    "ActionKind",
    "ActionStatus",
    "IllegalActionMove",
    "PendingAction",
    "RefundReason",
    "ResultEvent",
    "SignerKind",
    "check_move",
    "moves_into",
]

NATIVE = "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
"""The native coin's pseudo-address, lowercase (see settings.NATIVE_TOKEN)."""


class ActionKind(StrEnum):
    PREFILL = "prefill"
    """The relayer pays ``amount_out`` of ``tokenOut`` to the recipient (destination chain)."""
    RELAYER_REFUND = "relayer_refund"
    """The intent address repays the relayer from the deposit (source chain)."""
    FEE_SWEEP = "fee_sweep"
    """The intent address pays the fees to the fee account (source chain)."""
    USER_REFUND = "user_refund"
    """The intent address pays back to ``refund_address`` (the deposit's chain)."""


class SignerKind(StrEnum):
    RELAYER = "relayer"
    """The relayer's hot wallet: signs prefills; pays its own gas."""
    GAS_TANK = "gas_tank"
    """Funds the gas of intent addresses (gas top-ups); never an action's signer, never
    moves user money."""
    INTENT = "intent"
    """A single-use intent address, key derived from the HD seed at ``signer_index``."""


class RefundReason(StrEnum):
    EXPIRED = "expired"
    EXCESS = "excess"
    LATE_DEPOSIT = "late_deposit"
    WRONG_TOKEN = "wrong_token"
    FAILED = "failed"
    CANCELLED = "cancelled"
    """The merchant cancelled the PENDING intent (``POST .../cancel``)."""
    MERCHANT = "merchant"
    """The merchant asked for the refund of a FUNDED intent (``POST .../refund``)."""


class ActionStatus(StrEnum):
    READY = "ready"
    """Written by the lifecycle (or back after a failed attempt): due for the executor of
    its chain at ``not_before``."""
    HELD = "held"
    """Ready, but spends from an intent address on a chain where a deposit of its intent
    is orphaned by a reorg: not executed until the deposit is back (``deposit_holds``)."""
    SUBMITTED = "submitted"
    """A transaction for it is recorded (maybe sent); see ``chain_transactions``."""
    CONFIRMED = "confirmed"
    """Its transfer is mined with status 1 at the chain's confirmation depth (terminal)."""
    FAILED = "failed"
    """The retry policy gave up; the lifecycle decides what follows (terminal)."""
    CANCELLED = "cancelled"
    """Withdrawn before any transaction was recorded: a reorg retracted the deposit that
    owed it (terminal)."""


INITIAL_STATUSES = frozenset({ActionStatus.READY, ActionStatus.HELD})
"""What a new action row starts as."""

ALLOWED_MOVES: dict[ActionStatus, frozenset[ActionStatus]] = {
    # READY -> READY: a failed attempt before any transaction (its gas estimate
    # reverted) leaves it ready, due later, with one more attempt counted.
    ActionStatus.READY: frozenset(
        {
            ActionStatus.SUBMITTED,
            ActionStatus.READY,
            ActionStatus.HELD,
            ActionStatus.CANCELLED,
            ActionStatus.FAILED,
        }
    ),
    ActionStatus.HELD: frozenset({ActionStatus.READY}),
    # SUBMITTED -> READY: an attempt failed (reverted, nonce taken): planned again.
    ActionStatus.SUBMITTED: frozenset(
        {ActionStatus.CONFIRMED, ActionStatus.FAILED, ActionStatus.READY}
    ),
    ActionStatus.CONFIRMED: frozenset(),
    ActionStatus.FAILED: frozenset(),
    ActionStatus.CANCELLED: frozenset(),
}


class IllegalActionMove(Exception):
    """A status change of an action that :data:`ALLOWED_MOVES` does not allow."""

    def __init__(self, current: ActionStatus, target: ActionStatus) -> None:
        super().__init__(f"an action cannot move from {current} to {target}")
        self.current = current
        self.target = target


def check_move(current: ActionStatus, target: ActionStatus) -> None:
    """Raise :class:`IllegalActionMove` unless ``current -> target`` is allowed."""
    if target not in ALLOWED_MOVES[current]:
        raise IllegalActionMove(current, target)


def moves_into(target: ActionStatus, sources: Iterable[ActionStatus]) -> list[str]:
    """The stored values of ``sources`` for a compare-and-set into ``target``
    (``WHERE status = ANY(...)``); raises if any of them may not move there."""
    values = []
    for source in sources:
        check_move(source, target)
        values.append(source.value)
    return values


class ResultEvent(StrEnum):
    """What an ``ActionResultMessage`` reports (``event``)."""

    SENT = "sent"
    """The first broadcast of the action's transfer (once per action)."""
    CONFIRMED = "confirmed"
    """The transfer is mined with status 1 at confirmation depth."""
    FAILED = "failed"
    """The retry policy gave up; nothing of the action moved."""


@dataclass(frozen=True, slots=True)
class PendingAction:
    """Money to move, decided by the lifecycle and recorded with the state change."""

    kind: ActionKind
    chain: str
    token: str
    amount: int
    to_address: str
    signer: SignerKind
    reason: RefundReason | None = None

    @property
    def gas_from_amount(self) -> bool:
        """A native transfer from the intent address pays its own gas."""
        return self.signer is SignerKind.INTENT and self.token == NATIVE


@dataclass(frozen=True, slots=True)
class Action:
    """An action as stored for its executor (a row of ``actions``, see
    ``0003_execution.sql``)."""

    id: int
    intent_id: int
    kind: ActionKind
    chain: str
    token: str
    """Lowercase token contract, or :data:`NATIVE`."""
    amount: int
    to_address: str
    signer_kind: SignerKind
    signer_index: int | None
    gas_from_amount: bool
    attempts: int

    @property
    def native(self) -> bool:
        return self.token == NATIVE
