"""The merchant's commands (``lifecycle.commands``: cancel, refund) on an in-memory unit
of work: what each state answers, repeats, and a crash before the commit."""

from __future__ import annotations

import pytest
from tests.unit.lifecycle.lifecycle_builders import NOW, REFUND_TO, book, deposit, intent_row
from tests.unit.lifecycle.lifecycle_fakes import FakeUnitOfWork

from intentd.domain.intent import ActionKind, RefundReason
from intentd.domain.status import IntentStatus
from intentd.lifecycle.commands import PREFILL_TAKEN, CommandRefused, cancel, refund
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.outcomes import Outcome


@pytest.fixture
def uow() -> FakeUnitOfWork:
    store = FakeUnitOfWork()
    store.add_intent(intent_row(1, total_due=1_000))
    return store


def to() -> str:
    return intent_row(1).intent_address


def refunds(uow: FakeUnitOfWork) -> list[tuple[int, RefundReason | None, str]]:
    return [
        (a.action.amount, a.action.reason, a.status)
        for a in uow.actions_of(1)
        if a.action.kind is ActionKind.USER_REFUND
    ]


async def test_cancelling_an_unpaid_intent_ends_it_with_intent_cancelled(
    uow: FakeUnitOfWork,
) -> None:
    answer = await cancel(uow, book(), 1, now=NOW)
    assert answer.applied
    assert answer.row.status is IntentStatus.CANCELLED
    assert uow.row(1).status is IntentStatus.CANCELLED
    assert uow.event_types() == ["intent_cancelled"]
    assert uow.actions_of(1) == []


async def test_cancelling_a_partly_paid_intent_refunds_what_it_received(
    uow: FakeUnitOfWork,
) -> None:
    await credit(uow, book(), deposit(to(), 400), now=NOW)
    answer = await cancel(uow, book(), 1, now=NOW)
    assert (answer.row.status, answer.row.refunded) == (IntentStatus.REFUNDING, 400)
    assert refunds(uow) == [(400, RefundReason.CANCELLED, "ready")]
    [action] = [a for a in uow.actions_of(1) if a.action.kind is ActionKind.USER_REFUND]
    assert action.action.to_address == REFUND_TO
    assert uow.event_types() == ["intent_funded"]  # the refund's confirmation ends it


async def test_cancelling_less_than_min_sweep_retains_it(uow: FakeUnitOfWork) -> None:
    await credit(uow, book(min_sweep=50), deposit(to(), 30), now=NOW)
    answer = await cancel(uow, book(min_sweep=50), 1, now=NOW)
    assert answer.row.status is IntentStatus.CANCELLED
    assert refunds(uow) == []


async def test_a_second_cancel_answers_the_same_state_and_changes_nothing(
    uow: FakeUnitOfWork,
) -> None:
    await credit(uow, book(), deposit(to(), 400), now=NOW)
    first = await cancel(uow, book(), 1, now=NOW)
    events, actions = uow.event_types(), refunds(uow)
    again = await cancel(uow, book(), 1, now=NOW)
    assert not again.applied
    assert again.row == first.row
    assert (uow.event_types(), refunds(uow)) == (events, actions)
    unpaid = FakeUnitOfWork()
    unpaid.add_intent(intent_row(1))
    await cancel(unpaid, book(), 1, now=NOW)
    assert not (await cancel(unpaid, book(), 1, now=NOW)).applied
    assert unpaid.event_types() == ["intent_cancelled"]


async def test_a_payment_after_cancel_is_a_late_deposit_refunded(uow: FakeUnitOfWork) -> None:
    await cancel(uow, book(), 1, now=NOW)
    outcome = await credit(uow, book(), deposit(to(), 700, n=2), now=NOW)
    assert outcome is Outcome.REFUND_OWED
    assert uow.row(1).received == 0
    assert refunds(uow) == [(700, RefundReason.LATE_DEPOSIT, "ready")]
    assert uow.event_types() == ["intent_cancelled"]


@pytest.mark.parametrize(
    "status",
    [
        IntentStatus.FUNDED,
        IntentStatus.INITIATED,
        IntentStatus.COMPLETED,
        IntentStatus.EXPIRED,
        IntentStatus.REFUNDING,
        IntentStatus.REFUNDED,
    ],
)
async def test_cancel_is_refused_naming_the_state(status: IntentStatus) -> None:
    uow = FakeUnitOfWork()
    uow.add_intent(intent_row(1, status=status))
    with pytest.raises(CommandRefused) as refused:
        await cancel(uow, book(), 1, now=NOW)
    assert refused.value.status is status
    assert uow.row(1).status is status and uow.event_types() == []


async def test_a_funded_intent_whose_prefill_waits_is_refunded_in_full(
    uow: FakeUnitOfWork,
) -> None:
    await credit(uow, book(), deposit(to(), 1_200), now=NOW)
    answer = await refund(uow, book(), 1, now=NOW)
    assert answer.applied
    assert (answer.row.status, answer.row.refunded) == (IntentStatus.REFUNDING, 1_200)
    [prefill] = [a for a in uow.actions_of(1) if a.action.kind is ActionKind.PREFILL]
    assert prefill.status == "cancelled"
    assert refunds(uow) == [(1_200, RefundReason.MERCHANT, "ready")]
    again = await refund(uow, book(), 1, now=NOW)
    assert not again.applied and again.row == answer.row
    assert refunds(uow) == [(1_200, RefundReason.MERCHANT, "ready")]


@pytest.mark.parametrize("prefill", ["submitted", "confirmed", "failed", "cancelled"])
async def test_no_refund_while_a_prefill_transaction_may_pay_out(
    uow: FakeUnitOfWork, prefill: str
) -> None:
    await credit(uow, book(), deposit(to(), 1_000), now=NOW)
    [action] = [a for a in uow.actions_of(1) if a.action.kind is ActionKind.PREFILL]
    action.status = prefill  # the executor took it (or it ended) before the lifecycle knew
    before = uow.row(1)
    with pytest.raises(CommandRefused) as refused:
        await refund(uow, book(), 1, now=NOW)
    assert (refused.value.status, refused.value.why) == (IntentStatus.FUNDED, PREFILL_TAKEN)
    assert uow.row(1) == before and refunds(uow) == [] and action.status == prefill


@pytest.mark.parametrize(
    "status",
    [
        IntentStatus.PENDING,
        IntentStatus.INITIATED,
        IntentStatus.COMPLETED,
        IntentStatus.EXPIRED,
        IntentStatus.CANCELLED,
        IntentStatus.REFUNDING,
        IntentStatus.REFUNDED,
    ],
)
async def test_refund_is_refused_naming_the_state(status: IntentStatus) -> None:
    uow = FakeUnitOfWork()
    uow.add_intent(intent_row(1, status=status))
    with pytest.raises(CommandRefused) as refused:
        await refund(uow, book(), 1, now=NOW)
    assert refused.value.status is status


async def test_a_cancelled_intent_cannot_be_refunded_again(uow: FakeUnitOfWork) -> None:
    await credit(uow, book(), deposit(to(), 400), now=NOW)
    await cancel(uow, book(), 1, now=NOW)
    with pytest.raises(CommandRefused, match="REFUNDING"):
        await refund(uow, book(), 1, now=NOW)
    assert refunds(uow) == [(400, RefundReason.CANCELLED, "ready")]


@pytest.mark.parametrize("command", [cancel, refund])
async def test_a_crash_before_the_commit_leaves_nothing_and_a_retry_decides_once(
    uow: FakeUnitOfWork, command: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    amount = 400 if command is cancel else 1_000
    await credit(uow, book(), deposit(to(), amount), now=NOW)
    before = (uow.row(1), uow.event_types(), [(a.id, a.status) for a in uow.actions_of(1)])
    real = uow.intents.get

    async def crash(intent_id: int) -> None:  # the last read, after every write
        raise ConnectionResetError("connection lost before COMMIT")

    monkeypatch.setattr(uow.intents, "get", crash)
    with pytest.raises(ConnectionResetError):
        await command(uow, book(), 1, now=NOW)  # type: ignore[operator]
    assert (uow.row(1), uow.event_types(), [(a.id, a.status) for a in uow.actions_of(1)]) == (
        before
    )
    monkeypatch.setattr(uow.intents, "get", real)
    assert (await command(uow, book(), 1, now=NOW)).applied  # type: ignore[operator]
    assert not (await command(uow, book(), 1, now=NOW)).applied  # type: ignore[operator]
    [decided] = refunds(uow)
    assert decided[0] == amount
    assert uow.row(1).refunded == amount


async def test_an_unknown_intent_is_a_lookup_error(uow: FakeUnitOfWork) -> None:
    with pytest.raises(LookupError):
        await cancel(uow, book(), 99, now=NOW)
