"""When a refund waits for approval and who may execute it (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.access.approvals import (
    ApprovalRefusal,
    ApprovalStatus,
    PendingApproval,
    approval_refusal,
    needs_approval,
    refund_value_usd,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("threshold", "value", "needed"),
    [
        (None, Decimal(10**9), False),
        (Decimal(100), Decimal(100), False),
        (Decimal(100), Decimal("100.01"), True),
        (Decimal(0), Decimal("0.01"), True),
        (Decimal(100), None, True),  # a value that cannot be told waits
        (None, None, False),
    ],
)
def test_needs_approval(threshold: Decimal | None, value: Decimal | None, needed: bool) -> None:
    assert needs_approval(threshold, value) is needed


def test_value_at_the_intents_quote_else_the_price() -> None:
    # 10 USDC due, quoted 10.10 USD: 4 USDC held is worth 4.04 USD.
    assert refund_value_usd(
        4_000_000, total_due=10_000_000, total_in_usd=Decimal("10.10"), unit_price=None, decimals=6
    ) == Decimal("4.04")
    assert refund_value_usd(
        10**16, total_due=10**16, total_in_usd=None, unit_price=Decimal(3000), decimals=18
    ) == Decimal(30)
    assert refund_value_usd(5, total_due=10, total_in_usd=None, unit_price=None, decimals=6) is None
    assert refund_value_usd(0, total_due=10, total_in_usd=None, unit_price=None, decimals=6) == 0


@given(
    small=st.integers(min_value=0, max_value=10**30),
    extra=st.integers(min_value=0, max_value=10**30),
    due=st.integers(min_value=1, max_value=10**30),
    usd=st.decimals(min_value=0, max_value=10**9, places=2),
)
def test_holding_more_is_never_worth_less(small: int, extra: int, due: int, usd: Decimal) -> None:
    def value(amount: int) -> Decimal | None:
        return refund_value_usd(
            amount, total_due=due, total_in_usd=usd, unit_price=None, decimals=6
        )

    low, high = value(small), value(small + extra)
    assert low is not None
    assert high is not None
    assert low <= high


def _approval(**changes: object) -> PendingApproval:
    values: dict[str, object] = {
        "status": ApprovalStatus.PENDING,
        "expires_at": T0 + timedelta(hours=1),
        "requested_by_id": "alice",
        "amount": 100,
    }
    values.update(changes)
    return PendingApproval(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("approval", "approver", "held", "now", "refusal"),
    [
        (_approval(), "bob", 100, T0, None),
        (_approval(), "bob", 40, T0, None),  # less than approved (a retraction): fine
        (_approval(), "alice", 100, T0, ApprovalRefusal.OWN_REQUEST),
        (_approval(), "bob", 101, T0, ApprovalRefusal.AMOUNT_CHANGED),
        (_approval(), "bob", 100, T0 + timedelta(hours=1), ApprovalRefusal.EXPIRED),
        (
            _approval(status=ApprovalStatus.EXECUTED),
            "bob",
            0,
            T0,
            ApprovalRefusal.NOT_PENDING,
        ),
        (
            _approval(status=ApprovalStatus.REJECTED),
            "bob",
            100,
            T0,
            ApprovalRefusal.NOT_PENDING,
        ),
    ],
)
def test_approval_refusal(
    approval: PendingApproval,
    approver: str,
    held: int,
    now: datetime,
    refusal: ApprovalRefusal | None,
) -> None:
    assert approval_refusal(approval, approver_id=approver, held_now=held, now=now) is refusal
