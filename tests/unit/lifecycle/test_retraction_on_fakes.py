"""Retracting a deposit after a reorg (``lifecycle.retractions.retract``), and the holds
it leaves when it cannot be undone, on an in-memory unit of work."""

from __future__ import annotations

import pytest
from tests.unit.lifecycle.lifecycle_builders import (
    NOW,
    USDT,
    book,
    deposit,
    intent_row,
    result,
    retraction_of,
)
from tests.unit.lifecycle.lifecycle_fakes import FakeUnitOfWork

from intentd.domain.action_results import ResultEvent
from intentd.domain.deposits import Disposition
from intentd.domain.intent import ActionKind
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.handlers import apply_action_result
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.retractions import retract


@pytest.fixture
def uow() -> FakeUnitOfWork:
    store = FakeUnitOfWork()
    store.add_intent(intent_row(1, total_due=1_000))
    return store


def to() -> str:
    return intent_row(1).intent_address


async def test_retracting_a_deposit_of_a_pending_intent_un_credits_it(uow: FakeUnitOfWork) -> None:
    paid = deposit(to(), 400)
    await credit(uow, book(), paid, now=NOW)
    events = len(uow.published())
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTED
    row = uow.row(1)
    assert (row.status, row.received, row.funding_status) == (
        IntentStatus.PENDING,
        0,
        FundingStatus.NONE,
    )
    assert uow.recorded(paid.key).disposition is Disposition.RETRACTED
    assert len(uow.published()) == events  # no event un-says the credit


async def test_retracting_the_deposit_that_funded_an_intent_cancels_its_prefill(
    uow: FakeUnitOfWork,
) -> None:
    paid = deposit(to(), 1_000)
    await credit(uow, book(), paid, now=NOW)
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTED
    assert uow.row(1).status is IntentStatus.PENDING
    [prefill] = uow.actions_of(1)
    assert prefill.status == "cancelled"


async def test_a_prefill_already_signed_makes_the_retraction_an_alert_with_a_hold(
    uow: FakeUnitOfWork,
) -> None:
    paid = deposit(to(), 1_000)
    await credit(uow, book(), paid, now=NOW)
    uow.actions_of(1)[0].status = "signed"
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTION_ALERT
    assert uow.row(1).status is IntentStatus.FUNDED  # rolled back: nothing un-credited
    stored = uow.recorded(paid.key)
    assert stored.orphaned and stored.disposition is Disposition.CREDITED


async def test_after_initiation_a_retraction_holds_the_spending_actions(
    uow: FakeUnitOfWork,
) -> None:
    paid = deposit(to(), 1_000)
    await credit(uow, book(), paid, now=NOW)
    prefill = uow.actions_of(1)[0]
    sent = result(prefill.id, 1, ActionKind.PREFILL, ResultEvent.SENT)
    await apply_action_result(uow, book(), sent, now=NOW)
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTION_ALERT
    assert uow.row(1).status is IntentStatus.INITIATED and uow.row(1).received == 1_000
    assert uow.recorded(paid.key).orphaned
    # the prefill confirms meanwhile: the relayer refund and fee sweep start held
    confirmed = result(prefill.id, 1, ActionKind.PREFILL, ResultEvent.CONFIRMED, block_number=9)
    await apply_action_result(uow, book(), confirmed, now=NOW)
    spending = [a for a in uow.actions_of(1) if a.action.kind is not ActionKind.PREFILL]
    assert {a.action.kind for a in spending} == {ActionKind.RELAYER_REFUND, ActionKind.FEE_SWEEP}
    assert {a.status for a in spending} == {"held"}
    # the same transfer back on chain (another block) releases them
    back = deposit(to(), 1_000, block_number=8, branch=1)
    assert await credit(uow, book(), back, now=NOW) is Outcome.RELOCATED
    assert {a.status for a in spending} == {"ready"}
    assert not uow.recorded(paid.key).orphaned


async def test_a_hold_is_released_when_its_very_block_is_canonical_again(
    uow: FakeUnitOfWork,
) -> None:
    paid = deposit(to(), 1_000)
    await credit(uow, book(), paid, now=NOW)
    prefill = uow.actions_of(1)[0]
    await apply_action_result(
        uow, book(), result(prefill.id, 1, ActionKind.PREFILL, ResultEvent.SENT), now=NOW
    )
    await retract(uow, book(), retraction_of(paid), now=NOW)
    assert await credit(uow, book(), paid, now=NOW) is Outcome.DUPLICATE
    assert not uow.recorded(paid.key).orphaned


async def test_retracting_a_refund_owed_deposit_cancels_its_refund(uow: FakeUnitOfWork) -> None:
    wrong = deposit(to(), 700, token=USDT)
    await credit(uow, book(), wrong, now=NOW)
    assert await retract(uow, book(), retraction_of(wrong), now=NOW) is Outcome.RETRACTED
    [refund] = uow.actions_of(1)
    assert refund.status == "cancelled"
    assert uow.recorded(wrong.key).disposition is Disposition.RETRACTED


async def test_a_refund_already_signed_makes_the_retraction_an_alert(
    uow: FakeUnitOfWork,
) -> None:
    wrong = deposit(to(), 700, token=USDT)
    await credit(uow, book(), wrong, now=NOW)
    uow.actions_of(1)[0].status = "signed"
    assert await retract(uow, book(), retraction_of(wrong), now=NOW) is Outcome.RETRACTION_ALERT
    assert uow.recorded(wrong.key).orphaned


async def test_a_retraction_of_nothing_recorded_or_retracted_twice_is_a_no_op(
    uow: FakeUnitOfWork,
) -> None:
    paid = deposit(to(), 400)
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTION_NOOP
    await credit(uow, book(), paid, now=NOW)
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTED
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTION_NOOP


async def test_a_retraction_names_its_block_a_relocated_record_is_not_it(
    uow: FakeUnitOfWork,
) -> None:
    paid = deposit(to(), 400, block_number=5)
    await credit(uow, book(), paid, now=NOW)
    await credit(uow, book(), deposit(to(), 400, block_number=6, branch=1), now=NOW)
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTION_NOOP
    assert uow.row(1).received == 400
