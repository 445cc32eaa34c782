"""Action results (``lifecycle.handlers.apply_action_result``) and expiry
(``lifecycle.handlers.expire``) on an in-memory unit of work."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.unit.lifecycle.lifecycle_builders import (
    EXPIRES,
    FEE_ACCOUNT,
    NOW,
    REFUND_TO,
    RELAYER,
    SOURCE,
    USDC,
    book,
    deposit,
    intent_row,
    result,
    tx,
)
from tests.unit.lifecycle.lifecycle_fakes import FakeUnitOfWork

from intentd.domain.action_results import ResultEvent
from intentd.domain.intent import ActionKind, RefundReason
from intentd.domain.status import IntentStatus
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.handlers import apply_action_result, expire
from intentd.lifecycle.outcomes import Outcome, Unappliable

SENT, CONFIRMED, FAILED = ResultEvent.SENT, ResultEvent.CONFIRMED, ResultEvent.FAILED


async def funded(paid: int = 1_000, *, total_due: int = 1_000) -> tuple[FakeUnitOfWork, int]:
    """An intent FUNDED by ``paid``; the id of its prefill."""
    uow = FakeUnitOfWork()
    row = uow.add_intent(intent_row(1, total_due=total_due))
    await credit(uow, book(), deposit(row.intent_address, paid), now=NOW)
    [prefill] = uow.actions_of(1)
    return uow, prefill.id


def owed(uow: FakeUnitOfWork, kind: ActionKind) -> list[tuple[str, int, str]]:
    return [
        (a.action.to_address, a.action.amount, a.action.reason.value if a.action.reason else "")
        for a in uow.actions_of(1)
        if a.action.kind is kind
    ]


async def test_a_sent_prefill_initiates_the_intent() -> None:
    uow, prefill = await funded()
    sent = result(prefill, 1, ActionKind.PREFILL, SENT, tx_hash=tx(77))
    assert await apply_action_result(uow, book(), sent, now=NOW) is Outcome.APPLIED
    row = uow.row(1)
    assert (row.status, row.tx_hash, row.relayer) == (IntentStatus.INITIATED, tx(77), RELAYER)
    assert uow.event_types()[-1] == "intent_initiated"


async def test_an_over_funded_intent_refunds_its_excess_at_initiation() -> None:
    uow, prefill = await funded(1_300)
    await apply_action_result(uow, book(), result(prefill, 1, ActionKind.PREFILL, SENT), now=NOW)
    assert owed(uow, ActionKind.USER_REFUND) == [(REFUND_TO, 300, "excess")]
    assert uow.row(1).refunded == 300


async def test_a_confirmed_prefill_completes_the_intent_repays_the_relayer_sweeps_fees() -> None:
    uow, prefill = await funded()
    await apply_action_result(uow, book(), result(prefill, 1, ActionKind.PREFILL, SENT), now=NOW)
    confirmed = result(prefill, 1, ActionKind.PREFILL, CONFIRMED, block_number=12)
    assert await apply_action_result(uow, book(), confirmed, now=NOW) is Outcome.APPLIED
    assert uow.row(1).status is IntentStatus.COMPLETED
    assert owed(uow, ActionKind.RELAYER_REFUND) == [(RELAYER, 990, "")]
    assert owed(uow, ActionKind.FEE_SWEEP) == [(FEE_ACCOUNT, 10, "")]
    completed = uow.published()[-1]
    assert completed["type"] == "intent_completed"
    assert completed["data"]["prefill"]["block_number"] == 12


async def test_a_confirmation_without_a_sent_result_initiates_and_completes_at_once() -> None:
    uow, prefill = await funded()
    confirmed = result(prefill, 1, ActionKind.PREFILL, CONFIRMED, block_number=3)
    await apply_action_result(uow, book(), confirmed, now=NOW)
    assert uow.row(1).status is IntentStatus.COMPLETED
    assert uow.event_types()[-2:] == ["intent_initiated", "intent_completed"]


async def test_without_a_fee_account_the_relayer_is_repaid_everything() -> None:
    uow, prefill = await funded()
    confirmed = result(prefill, 1, ActionKind.PREFILL, CONFIRMED)
    await apply_action_result(uow, book(fee_account=""), confirmed, now=NOW)
    assert owed(uow, ActionKind.RELAYER_REFUND) == [(RELAYER, 1_000, "")]
    assert owed(uow, ActionKind.FEE_SWEEP) == []


@pytest.mark.parametrize("sent_first", [False, True])
async def test_a_failed_prefill_refunds_what_is_held(sent_first: bool) -> None:
    uow, prefill = await funded(1_300)
    if sent_first:  # the excess went back at initiation already
        await apply_action_result(
            uow, book(), result(prefill, 1, ActionKind.PREFILL, SENT), now=NOW
        )
    failed = result(prefill, 1, ActionKind.PREFILL, FAILED, error="reverted")
    assert await apply_action_result(uow, book(), failed, now=NOW) is Outcome.APPLIED
    assert uow.row(1).status is IntentStatus.REFUNDING
    refunds = owed(uow, ActionKind.USER_REFUND)
    assert sum(amount for _, amount, _ in refunds) == 1_300
    assert refunds[-1] == (REFUND_TO, 1_000 if sent_first else 1_300, "failed")


async def test_a_confirmed_refund_of_a_failed_intent_ends_it_refunded() -> None:
    uow, prefill = await funded()
    failed = result(prefill, 1, ActionKind.PREFILL, FAILED)
    await apply_action_result(uow, book(), failed, now=NOW)
    [refund] = [a for a in uow.actions_of(1) if a.action.kind is ActionKind.USER_REFUND]
    confirmed = result(
        refund.id, 1, ActionKind.USER_REFUND, CONFIRMED, chain=SOURCE, amount_sent=1_000,
        gas_cost=0,
    )  # fmt: skip
    assert await apply_action_result(uow, book(), confirmed, now=NOW) is Outcome.APPLIED
    assert uow.row(1).status is IntentStatus.REFUNDED
    refunded = uow.published()[-1]
    assert refunded["type"] == "intent_refunded"
    assert refunded["data"]["refund"]["reason"] == "failed"
    assert refunded["data"]["refund"]["amount"] == "0.001"


async def test_a_confirmed_excess_refund_is_announced_and_ends_nothing() -> None:
    uow, prefill = await funded(1_300)
    await apply_action_result(uow, book(), result(prefill, 1, ActionKind.PREFILL, SENT), now=NOW)
    [refund] = [a for a in uow.actions_of(1) if a.action.kind is ActionKind.USER_REFUND]
    confirmed = result(refund.id, 1, ActionKind.USER_REFUND, CONFIRMED, chain=SOURCE)
    await apply_action_result(uow, book(), confirmed, now=NOW)
    assert uow.row(1).status is IntentStatus.INITIATED
    assert uow.published()[-1]["data"]["refund"]["reason"] == RefundReason.EXCESS.value


async def test_a_refund_result_for_an_action_without_a_reason_is_unappliable() -> None:
    uow, prefill = await funded()
    mismatched = result(prefill, 1, ActionKind.USER_REFUND, CONFIRMED, chain=SOURCE)
    with pytest.raises(Unappliable, match="not a user refund"):
        await apply_action_result(uow, book(), mismatched, now=NOW)
    assert uow.state.applied == set()  # rolled back: a fixed store could apply it later


async def test_a_result_applied_twice_changes_nothing_the_second_time() -> None:
    uow, prefill = await funded()
    sent = result(prefill, 1, ActionKind.PREFILL, SENT)
    await apply_action_result(uow, book(), sent, now=NOW)
    before = (uow.row(1), len(uow.state.outbox), len(uow.state.actions))
    assert await apply_action_result(uow, book(), sent, now=NOW) is Outcome.DUPLICATE
    assert (uow.row(1), len(uow.state.outbox), len(uow.state.actions)) == before


async def test_a_result_for_an_unknown_intent_is_a_duplicate() -> None:
    uow = FakeUnitOfWork()
    sent = result(5, 42, ActionKind.PREFILL, SENT)
    assert await apply_action_result(uow, book(), sent, now=NOW) is Outcome.DUPLICATE


async def test_a_failed_refund_changes_no_state() -> None:
    uow, prefill = await funded()
    await apply_action_result(uow, book(), result(prefill, 1, ActionKind.PREFILL, FAILED), now=NOW)
    [refund] = [a for a in uow.actions_of(1) if a.action.kind is ActionKind.USER_REFUND]
    before = uow.row(1)
    failed = result(refund.id, 1, ActionKind.USER_REFUND, FAILED, chain=SOURCE, error="x")
    assert await apply_action_result(uow, book(), failed, now=NOW) is Outcome.APPLIED
    assert uow.row(1) == before


# --- expiry -----------------------------------------------------------------------------


def pending() -> FakeUnitOfWork:
    uow = FakeUnitOfWork()
    uow.add_intent(intent_row(1, total_due=1_000))
    return uow


async def test_an_intent_is_not_expired_before_its_time() -> None:
    uow = pending()
    assert await expire(uow, book(), 1, now=EXPIRES - timedelta(seconds=1)) is Outcome.NOT_DUE
    assert uow.row(1).status is IntentStatus.PENDING
    assert await expire(uow, book(), 99, now=EXPIRES) is Outcome.NOT_DUE


async def test_an_intent_that_received_nothing_expires() -> None:
    uow = pending()
    assert await expire(uow, book(), 1, now=EXPIRES) is Outcome.EXPIRED
    assert uow.row(1).status is IntentStatus.EXPIRED and uow.actions_of(1) == []


async def test_an_expiring_intent_refunds_what_it_received() -> None:
    uow = pending()
    await credit(uow, book(), deposit(uow.row(1).intent_address, 400), now=NOW)
    assert await expire(uow, book(), 1, now=EXPIRES) is Outcome.EXPIRED
    assert uow.row(1).status is IntentStatus.REFUNDING
    assert owed(uow, ActionKind.USER_REFUND) == [(REFUND_TO, 400, "expired")]


async def test_an_expiring_intent_retains_what_is_below_min_sweep() -> None:
    uow = pending()
    await credit(uow, book(min_sweep=500), deposit(uow.row(1).intent_address, 400), now=NOW)
    assert await expire(uow, book(min_sweep=500), 1, now=EXPIRES) is Outcome.EXPIRED
    assert uow.row(1).status is IntentStatus.EXPIRED and owed(uow, ActionKind.USER_REFUND) == []


async def test_a_funded_intent_does_not_expire() -> None:
    uow, _ = await funded()
    assert await expire(uow, book(), 1, now=EXPIRES + timedelta(hours=1)) is Outcome.NOT_DUE
    assert uow.row(1).status is IntentStatus.FUNDED


def test_the_book_names_tokens_in_any_case() -> None:
    assert book().token(SOURCE, USDC.upper().replace("0X", "0x")) is not None
    assert book().token("NOWHERE", USDC) is None
