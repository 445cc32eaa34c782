"""Crediting a deposit (``lifecycle.crediting.credit``) on an in-memory unit of work."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.unit.lifecycle.lifecycle_builders import (
    DESTINATION,
    EXPIRES,
    NOW,
    REFUND_TO,
    ROGUE,
    TOPIC,
    USDT,
    address,
    book,
    deposit,
    intent_row,
    retraction_of,
)
from tests.unit.lifecycle.lifecycle_fakes import FakeUnitOfWork

from intentd.domain.deposits import Disposition
from intentd.domain.intent import ActionKind, RefundReason, SignerKind
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.outcomes import Outcome, Unappliable
from intentd.lifecycle.retractions import retract


@pytest.fixture
def uow() -> FakeUnitOfWork:
    store = FakeUnitOfWork()
    store.add_intent(intent_row(1, total_due=1_000))
    return store


def to() -> str:
    return intent_row(1).intent_address


async def test_a_partial_deposit_is_credited_and_announced_without_an_action(
    uow: FakeUnitOfWork,
) -> None:
    assert await credit(uow, book(), deposit(to(), 400), now=NOW) is Outcome.CREDITED
    row = uow.row(1)
    assert (row.status, row.funding_status, row.received) == (
        IntentStatus.PENDING,
        FundingStatus.UNDERFUNDED,
        400,
    )
    assert uow.actions_of(1) == []
    [event] = uow.published()
    assert event["type"] == "intent_funded" and event["sequence"] == 1
    assert event["data"]["funding"]["shortfall"] == "0.0006"
    assert uow.state.outbox[0][:2] == (TOPIC, "1")


async def test_the_deposit_that_covers_the_total_funds_the_intent_and_owes_the_prefill(
    uow: FakeUnitOfWork,
) -> None:
    await credit(uow, book(), deposit(to(), 400, n=1), now=NOW)
    assert await credit(uow, book(), deposit(to(), 600, n=2), now=NOW) is Outcome.CREDITED
    row = uow.row(1)
    assert (row.status, row.funding_status, row.received) == (
        IntentStatus.FUNDED,
        FundingStatus.EXACT,
        1_000,
    )
    [prefill] = uow.actions_of(1)
    assert prefill.action.kind is ActionKind.PREFILL and prefill.status == "ready"
    assert (prefill.action.chain, prefill.action.amount) == (DESTINATION, 990)
    assert prefill.action.signer is SignerKind.RELAYER
    assert uow.event_types() == ["intent_funded", "intent_funded"]


async def test_an_over_payment_funds_the_intent_and_keeps_the_excess_until_initiation(
    uow: FakeUnitOfWork,
) -> None:
    assert await credit(uow, book(), deposit(to(), 1_500), now=NOW) is Outcome.CREDITED
    row = uow.row(1)
    assert (row.status, row.funding_status, row.received) == (
        IntentStatus.FUNDED,
        FundingStatus.OVERFUNDED,
        1_500,
    )
    assert [a.action.kind for a in uow.actions_of(1)] == [ActionKind.PREFILL]
    assert uow.published()[0]["data"]["funding"]["excess"] == "0.0005"


@pytest.mark.parametrize(
    ("token", "chain"), [(USDT, "SRC"), ("0x" + "a" * 40, DESTINATION)], ids=["token", "chain"]
)
async def test_a_supported_token_other_than_token_in_is_owed_back(
    uow: FakeUnitOfWork, token: str, chain: str
) -> None:
    paid = deposit(to(), 700, token=token, chain=chain)
    assert await credit(uow, book(), paid, now=NOW) is Outcome.REFUND_OWED
    stored = uow.recorded(paid.key)
    assert (stored.disposition, stored.reason) == (
        Disposition.REFUND_OWED,
        RefundReason.WRONG_TOKEN,
    )
    [refund] = uow.actions_of(1)
    assert refund.deposit_id == stored.id  # a retraction can cancel it
    assert (refund.action.kind, refund.action.to_address, refund.action.amount) == (
        ActionKind.USER_REFUND,
        REFUND_TO,
        700,
    )
    assert (refund.action.chain, refund.action.token) == (chain, token)
    assert uow.row(1).received == 0 and uow.published() == []


async def test_a_token_the_chain_does_not_list_is_recorded_and_ignored(
    uow: FakeUnitOfWork,
) -> None:
    fake = deposit(to(), 10**9, token=ROGUE)
    assert await credit(uow, book(), fake, now=NOW) is Outcome.IGNORED
    assert uow.recorded(fake.key).disposition is Disposition.IGNORED
    assert uow.actions_of(1) == [] and uow.row(1).received == 0


async def test_a_deposit_after_funding_is_a_late_deposit_refunded(uow: FakeUnitOfWork) -> None:
    await credit(uow, book(), deposit(to(), 1_000, n=1), now=NOW)
    assert await credit(uow, book(), deposit(to(), 50, n=2), now=NOW) is Outcome.REFUND_OWED
    late = uow.recorded(deposit(to(), 50, n=2).key)
    assert late.reason is RefundReason.LATE_DEPOSIT
    assert uow.row(1).received == 1_000
    kinds = sorted(a.action.kind.value for a in uow.actions_of(1))
    assert kinds == ["prefill", "user_refund"]


async def test_a_deposit_mined_after_expiry_is_late_even_while_pending(
    uow: FakeUnitOfWork,
) -> None:
    after = deposit(to(), 1_000, block_time=EXPIRES + timedelta(seconds=1))
    assert await credit(uow, book(), after, now=NOW) is Outcome.REFUND_OWED
    assert uow.recorded(after.key).reason is RefundReason.LATE_DEPOSIT
    assert uow.row(1).status is IntentStatus.PENDING


async def test_a_late_deposit_below_min_sweep_is_retained_not_refunded(
    uow: FakeUnitOfWork,
) -> None:
    await credit(uow, book(min_sweep=100), deposit(to(), 1_000, n=1), now=NOW)
    dust = deposit(to(), 99, n=2)
    assert await credit(uow, book(min_sweep=100), dust, now=NOW) is Outcome.RETAINED
    assert uow.recorded(dust.key).disposition is Disposition.RETAINED
    assert [a.action.kind for a in uow.actions_of(1)] == [ActionKind.PREFILL]


async def test_a_deposit_to_an_address_no_intent_has_is_recorded_unmatched() -> None:
    uow = FakeUnitOfWork()
    stray = deposit(address(0xDEAD), 5)
    assert await credit(uow, book(), stray, now=NOW) is Outcome.UNMATCHED
    stored = uow.recorded(stray.key)
    assert (stored.intent_id, stored.disposition) == (None, Disposition.UNMATCHED)


async def test_a_transaction_of_ours_is_internal_not_the_users_money(
    uow: FakeUnitOfWork,
) -> None:
    top_up = deposit(to(), 1_000)
    uow.state.own.add((top_up.chain, top_up.tx_hash))
    assert await credit(uow, book(), top_up, now=NOW) is Outcome.INTERNAL
    assert uow.recorded(top_up.key).disposition is Disposition.INTERNAL
    assert uow.row(1).received == 0 and uow.actions_of(1) == []


async def test_a_duplicate_deposit_changes_nothing(uow: FakeUnitOfWork) -> None:
    paid = deposit(to(), 1_000)
    await credit(uow, book(), paid, now=NOW)
    before = (uow.row(1), len(uow.state.outbox), len(uow.state.actions))
    assert await credit(uow, book(), paid, now=NOW) is Outcome.DUPLICATE
    assert (uow.row(1), len(uow.state.outbox), len(uow.state.actions)) == before


async def test_the_same_transfer_re_mined_elsewhere_is_relocated_not_credited_again(
    uow: FakeUnitOfWork,
) -> None:
    await credit(uow, book(), deposit(to(), 400, block_number=5), now=NOW)
    moved = deposit(to(), 400, block_number=7, branch=1, log_index=3)
    assert await credit(uow, book(), moved, now=NOW) is Outcome.RELOCATED
    stored = uow.recorded(moved.key)
    assert (stored.deposit.block_number, stored.deposit.log_index) == (7, 3)
    assert uow.row(1).received == 400 and len(uow.published()) == 1


async def test_a_re_mined_transaction_making_another_transfer_is_refused(
    uow: FakeUnitOfWork,
) -> None:
    await credit(uow, book(), deposit(to(), 400, block_number=5), now=NOW)
    other = deposit(to(), 900, block_number=6, branch=1)
    with pytest.raises(Unappliable, match="another transfer"):
        await credit(uow, book(), other, now=NOW)
    assert uow.recorded(other.key).deposit.amount == 400
    assert uow.row(1).received == 400


async def test_a_deposit_without_identity_is_the_same_as_its_record_by_content(
    uow: FakeUnitOfWork,
) -> None:
    """A poller older than identities sends no ``transfer_index``: matched by content."""
    await credit(uow, book(), deposit(to(), 400, block_number=5), now=NOW)
    old = deposit(to(), 400, block_number=6, branch=1, log_index=9, transfer_index=None)
    assert await credit(uow, book(), old, now=NOW) is Outcome.RELOCATED
    assert uow.row(1).received == 400


async def test_a_retracted_deposit_seen_again_is_credited_again(uow: FakeUnitOfWork) -> None:
    paid = deposit(to(), 400, block_number=5)
    await credit(uow, book(), paid, now=NOW)
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTED
    assert uow.row(1).received == 0
    back = deposit(to(), 400, block_number=6, branch=1)
    assert await credit(uow, book(), back, now=NOW) is Outcome.CREDITED
    assert uow.row(1).received == 400
    assert [d.disposition for d in uow.state.deposits.values()] == [Disposition.CREDITED]


async def test_watching_a_deposit_reopens_it_only_when_recorded_anew(
    uow: FakeUnitOfWork,
) -> None:
    paid = deposit(to(), 400)
    await credit(uow, book(), paid, now=NOW, watch=True)
    assert uow.state.watched == {paid.key: True}
    uow.state.watched.clear()
    assert await credit(uow, book(), paid, now=NOW, watch=True) is Outcome.DUPLICATE
    assert uow.state.watched == {paid.key: False}


async def test_nothing_of_a_refused_deposit_is_kept(uow: FakeUnitOfWork) -> None:
    await credit(uow, book(), deposit(to(), 400, block_number=5), now=NOW, watch=True)
    uow.state.watched.clear()
    with pytest.raises(Unappliable):
        await credit(uow, book(), deposit(to(), 1, block_number=6, branch=1), now=NOW, watch=True)
    assert uow.state.watched == {}
