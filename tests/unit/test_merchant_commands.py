"""The merchant's commands on the intent aggregate: cancel and refund on request.

The same rules over random lifecycles: tests/unit/test_money_invariant.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.test_event_types import ADDRESS, EXPIRES, SOURCE, USDC, kinds, new_intent, pay

from intentd.domain.events import is_terminal
from intentd.domain.intent import ActionKind, Deposit, RefundReason
from intentd.domain.status import IllegalTransition, IntentStatus


def late_deposit(amount: int, n: int = 9) -> Deposit:
    return Deposit(
        SOURCE,
        f"0x{n:064x}",
        0,
        n,
        "0x" + "f" * 64,
        EXPIRES - timedelta(minutes=1),  # before expires_at: only the cancel makes it late
        USDC,
        "0x" + "2" * 40,
        ADDRESS,
        amount,
    )


def test_cancelling_with_nothing_received_ends_cancelled_with_intent_cancelled() -> None:
    intent = new_intent()
    intent.cancel()
    assert intent.status is IntentStatus.CANCELLED
    assert kinds(intent) == [("intent_cancelled", 1)]
    assert is_terminal(intent.events[0].type)
    assert intent.actions == [] and intent.retained == []


def test_cancelling_with_less_than_min_sweep_retains_it() -> None:
    intent = new_intent(min_sweep=50)
    pay(intent, 30)
    intent.events.clear()
    intent.cancel()
    assert intent.status is IntentStatus.CANCELLED
    assert [e.type.value for e in intent.events] == ["intent_cancelled"]
    assert intent.actions == []
    assert [(r.amount, r.reason) for r in intent.retained] == [(30, RefundReason.CANCELLED)]


def test_cancelling_a_partial_payment_refunds_all_of_it() -> None:
    intent = new_intent(min_sweep=50)
    pay(intent, 400)
    pay(intent, 100, n=2)
    intent.events.clear()
    intent.cancel()
    assert intent.status is IntentStatus.REFUNDING
    assert intent.events == []  # the terminal event is the refund's confirmation
    [refund] = intent.actions
    assert (refund.kind, refund.amount, refund.reason) == (
        ActionKind.USER_REFUND,
        500,
        RefundReason.CANCELLED,
    )
    assert refund.to_address == ADDRESS
    assert intent.held() == 0
    intent.refund_confirmed(
        reason=RefundReason.CANCELLED,
        chain=SOURCE,
        token=USDC,
        amount=500,
        amount_sent=500,
        gas_cost=0,
        tx_hash="0x" + "3" * 64,
    )
    assert intent.status is IntentStatus.REFUNDED
    assert is_terminal(intent.events[-1].type, "cancelled")


def test_a_payment_after_cancel_is_a_late_deposit_refunded() -> None:
    intent = new_intent(min_sweep=50)
    intent.cancel()
    intent.actions.clear()
    decision = intent.apply_deposit(late_deposit(700), token_supported=True, min_sweep=50)
    assert decision.reason is RefundReason.LATE_DEPOSIT
    assert intent.received == 0
    [refund] = intent.actions
    assert (refund.amount, refund.reason) == (700, RefundReason.LATE_DEPOSIT)


@pytest.mark.parametrize("status", [s for s in IntentStatus if s is not IntentStatus.PENDING])
def test_only_a_pending_intent_can_be_cancelled(status: IntentStatus) -> None:
    intent = new_intent()
    intent.status = status
    with pytest.raises(IllegalTransition, match=f"from {status}"):
        intent.cancel()
    assert intent.events == [] and intent.actions == []


def test_a_funded_intent_refunded_on_request_refunds_everything_held() -> None:
    intent = new_intent(total=1_000)
    pay(intent, 1_200)  # over-funded: the excess too
    assert intent.status is IntentStatus.FUNDED
    intent.actions.clear()
    intent.events.clear()
    intent.refund_on_request()
    assert intent.status is IntentStatus.REFUNDING
    [refund] = intent.actions
    assert (refund.amount, refund.reason) == (1_200, RefundReason.MERCHANT)
    assert intent.held() == 0


@pytest.mark.parametrize("status", [s for s in IntentStatus if s is not IntentStatus.FUNDED])
def test_only_a_funded_intent_is_refunded_on_request(status: IntentStatus) -> None:
    intent = new_intent()
    pay(intent, 1_000)
    intent.status = status
    intent.actions.clear()
    with pytest.raises(IllegalTransition, match=f"from {status}"):
        intent.refund_on_request()
    assert intent.actions == []


@given(payments=st.lists(st.integers(1, 600), max_size=4), min_sweep=st.integers(0, 100))
def test_cancel_refunds_exactly_what_is_held_or_retains_it(
    payments: list[int], min_sweep: int
) -> None:
    intent = new_intent(total=10_000, min_sweep=min_sweep)
    for n, amount in enumerate(payments, 1):
        pay(intent, amount, n)
    received = intent.received
    intent.actions.clear()
    intent.cancel()
    refunded = sum(a.amount for a in intent.actions)
    retained = sum(r.amount for r in intent.retained)
    assert refunded + retained == received
    assert refunded == 0 or refunded >= min_sweep
    assert (intent.status is IntentStatus.CANCELLED) == (refunded == 0)
