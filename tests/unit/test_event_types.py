"""Event types: what each terminal path emits, which event ends an intent, the envelope.

The same rules over random lifecycles: tests/unit/test_money_invariant.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from intentd.contract.events import envelope, event_id
from intentd.contract.mode import mode_of
from intentd.domain.events import EventType, is_terminal
from intentd.domain.intent import ENDING_REASONS, Deposit, Intent, RefundReason, Terms
from intentd.domain.status import FundingStatus, IntentStatus

SOURCE, DESTINATION = "BASE_TESTNET", "ARBITRUM_TESTNET"
USDC = "0x" + "a" * 40
ADDRESS = "0x" + "1" * 40
EXPIRES = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
LATER = EXPIRES + timedelta(seconds=1)


def new_intent(*, total: int = 1_000, min_sweep: int = 50) -> Intent:
    terms = Terms(
        source_chain=SOURCE,
        destination_chain=DESTINATION,
        token_in=USDC,
        token_out=USDC,
        total_due=total,
        fees=10,
        amount_out=total - 10,
        recipient=ADDRESS,
        refund_address=ADDRESS,
        expires_at=EXPIRES,
        min_sweep=min_sweep,
    )
    return Intent(7, terms, 0, IntentStatus.PENDING, FundingStatus.NONE, 0)


def pay(intent: Intent, amount: int, n: int = 1) -> None:
    deposit = Deposit(
        SOURCE,
        f"0x{n:064x}",
        0,
        n,
        "0x" + "f" * 64,
        EXPIRES - timedelta(minutes=1),
        USDC,
        "0x" + "2" * 40,
        ADDRESS,
        amount,
    )
    intent.apply_deposit(deposit, token_supported=True, min_sweep=intent.terms.min_sweep)


def kinds(intent: Intent) -> list[tuple[str, int]]:
    return [(e.type.value, e.sequence) for e in intent.events]


def test_expiry_with_nothing_received_ends_with_intent_expired() -> None:
    intent = new_intent()
    assert intent.expire(LATER)
    assert intent.status is IntentStatus.EXPIRED
    assert kinds(intent) == [("intent_expired", 1)]
    [ended] = intent.events
    assert (ended.funding_status, ended.received, ended.total) == (FundingStatus.NONE, 0, 1_000)
    assert is_terminal(ended.type)


def test_expiry_holding_less_than_min_sweep_ends_with_intent_expired_showing_it() -> None:
    intent = new_intent(min_sweep=50)
    pay(intent, 20)
    assert intent.expire(LATER)
    assert intent.status is IntentStatus.EXPIRED and intent.actions == []
    assert kinds(intent) == [("intent_funded", 1), ("intent_expired", 2)]
    assert (intent.events[-1].funding_status, intent.events[-1].received) == (
        FundingStatus.UNDERFUNDED,
        20,
    )


def test_expiry_holding_funds_ends_with_the_expired_refund() -> None:
    intent = new_intent(min_sweep=50)
    pay(intent, 400)
    assert intent.expire(LATER)
    assert intent.status is IntentStatus.REFUNDING
    assert kinds(intent) == [("intent_funded", 1)]  # no terminal event yet
    [refund] = intent.actions
    intent.events.clear()
    intent.refund_confirmed(
        reason=RefundReason.EXPIRED,
        chain=SOURCE,
        token=USDC,
        amount=refund.amount,
        amount_sent=refund.amount,
        gas_cost=0,
        tx_hash="0x" + "3" * 64,
    )
    assert intent.status is IntentStatus.REFUNDED
    assert kinds(intent) == [("intent_refunded", 2)]
    assert is_terminal(EventType.INTENT_REFUNDED, "expired")


def test_a_not_due_expiry_emits_nothing() -> None:
    intent = new_intent()
    assert not intent.expire(EXPIRES - timedelta(seconds=1))
    assert intent.events == [] and intent.status is IntentStatus.PENDING


@pytest.mark.parametrize(
    ("event_type", "reason", "terminal"),
    [
        (EventType.INTENT_FUNDED, None, False),
        (EventType.INTENT_INITIATED, None, False),
        (EventType.INTENT_COMPLETED, None, True),
        (EventType.INTENT_EXPIRED, None, True),
        (EventType.INTENT_REFUNDED, "expired", True),
        (EventType.INTENT_REFUNDED, "failed", True),
        (EventType.INTENT_REFUNDED, "excess", False),
        (EventType.INTENT_REFUNDED, "late_deposit", False),
        (EventType.INTENT_REFUNDED, "wrong_token", False),
        (EventType.INTENT_CANCELLED, None, True),
        (EventType.INTENT_REFUNDED, "cancelled", True),
        (EventType.INTENT_REFUNDED, "merchant", True),
        ("intent_completed", None, True),
    ],
)
def test_which_events_end_an_intent(
    event_type: EventType | str, reason: str | None, terminal: bool
) -> None:
    assert is_terminal(event_type, reason) is terminal


def test_the_refunds_that_end_an_intent_are_one_concept() -> None:
    assert {r for r in RefundReason if is_terminal(EventType.INTENT_REFUNDED, r.value)} == set(
        ENDING_REASONS
    )


def test_mode_follows_the_network_class() -> None:
    assert (mode_of("main"), mode_of("test")) == ("live", "test")


def test_the_envelope_of_intent_expired() -> None:
    intent = new_intent()
    intent.expire(LATER)
    body = envelope(
        intent.events[0],
        intent_id=7,
        record={"id": 7, "intent_status": "EXPIRED"},
        decimals=6,
        created_at=LATER,
        mode="test",
    )
    assert body == {
        "id": event_id(7, 1),
        "type": "intent_expired",
        "api_version": "v1",
        "created_at": "2026-11-22T12:00:01Z",
        "sequence": 1,
        "mode": "test",
        "intent": {"id": 7, "intent_status": "EXPIRED"},
        "data": {
            "funding": {
                "status": "NONE",
                "received": "0",
                "total": "0.001",
                "shortfall": "0.001",
                "excess": "0",
            }
        },
    }
