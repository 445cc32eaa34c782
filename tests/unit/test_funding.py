"""Funding rules: any order and duplication of deposits credits each one once.

The store's unique key ``(chain, tx_hash, log_index)`` is modelled by a set here;
the same property is checked against real PostgreSQL in
tests/integration/test_lifecycle.py.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from intentd.domain.deposits import Deposit, Disposition
from intentd.domain.events import EventType
from intentd.domain.intent import Intent, RefundReason, Terms
from intentd.domain.status import FundingStatus, IntentStatus, funding_status

SOURCE, OTHER_CHAIN = "BASE_TESTNET", "ARBITRUM_TESTNET"
USDC, USDT, ROGUE = "0x" + "a" * 40, "0x" + "b" * 40, "0x" + "c" * 40
ADDRESS = "0x" + "1" * 40
EXPIRES = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SUPPORTED = {USDC, USDT}


def new_intent(total: int) -> Intent:
    terms = Terms(
        source_chain=SOURCE,
        destination_chain=OTHER_CHAIN,
        token_in=USDC,
        token_out=USDC,
        total_due=total,
        fees=0,
        amount_out=total,
        recipient=ADDRESS,
        refund_address=ADDRESS,
        expires_at=EXPIRES,
    )
    return Intent(
        id=1,
        terms=terms,
        received=0,
        status=IntentStatus.PENDING,
        funding=FundingStatus.NONE,
        event_sequence=0,
    )


@st.composite
def deposits(draw: st.DrawFn) -> Deposit:
    index = draw(st.integers(0, 10**6))
    return Deposit(
        chain=draw(st.sampled_from([SOURCE, SOURCE, SOURCE, OTHER_CHAIN])),
        tx_hash=f"0x{index:064x}",
        log_index=draw(st.integers(-1, 3)),
        block_number=index,
        block_hash="0x" + "f" * 64,
        block_time=EXPIRES + timedelta(seconds=draw(st.sampled_from([-600, -1, 0, 1]))),
        token=draw(st.sampled_from([USDC, USDC, USDC, USDT, ROGUE])),
        from_address="0x" + "2" * 40,
        to_address=ADDRESS,
        amount=draw(st.integers(1, 2_000)),
    )


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[Deposit], list[Deposit]]:
    """Unique deposits, and a delivery order with duplicates of some of them."""
    unique = {(d.chain, d.tx_hash, d.log_index): d for d in draw(st.lists(deposits(), max_size=12))}
    base = list(unique.values())
    repeated = draw(st.lists(st.sampled_from(base), max_size=8)) if base else []
    return base, draw(st.permutations(base + repeated))


def key(d: Deposit) -> tuple[str, str, int]:
    return d.chain, d.tx_hash, d.log_index


@settings(max_examples=400)
@given(st.integers(1, 5_000), deliveries())
def test_each_deposit_is_decided_once_and_money_is_conserved(
    total: int, delivery: tuple[list[Deposit], list[Deposit]]
) -> None:
    unique, order = delivery
    intent = new_intent(total)
    decided: dict[tuple[str, str, int], Disposition] = {}
    credited_in_order: list[int] = []
    for deposit in order:
        if key(deposit) in decided:  # the store's unique key
            continue
        decision = intent.apply_deposit(deposit, token_supported=deposit.token in SUPPORTED)
        decided[key(deposit)] = decision.disposition
        if decision.disposition is Disposition.CREDITED:
            credited_in_order.append(deposit.amount)
            assert deposit.chain == SOURCE and deposit.token == USDC
            assert deposit.block_time <= EXPIRES
        elif decision.disposition is Disposition.REFUND_OWED:
            assert decision.reason in (RefundReason.WRONG_TOKEN, RefundReason.LATE_DEPOSIT)
        else:
            assert decision.disposition is Disposition.IGNORED
            assert deposit.token == ROGUE

    assert set(decided) == {key(d) for d in unique}
    by_disposition = {
        disp: sum(d.amount for d in unique if decided[key(d)] is disp) for disp in Disposition
    }
    assert intent.received == by_disposition[Disposition.CREDITED] == sum(credited_in_order)
    assert sum(by_disposition.values()) == sum(d.amount for d in unique)
    assert intent.funding is funding_status(intent.received, total)
    assert (intent.status is IntentStatus.FUNDED) == (intent.received >= total)
    if credited_in_order and intent.status is IntentStatus.FUNDED:
        # credits stop at the deposit that covered the total: later ones are refunded
        assert intent.received - credited_in_order[-1] < total
    assert [e.sequence for e in intent.events] == list(range(1, len(credited_in_order) + 1))
    assert all(e.type is EventType.INTENT_FUNDED for e in intent.events)
    running = 0
    for event, amount in zip(intent.events, credited_in_order, strict=True):
        running += amount
        assert event.received == running


def test_underpayment_then_top_up_funds_exactly() -> None:
    intent = new_intent(100)
    first = Deposit(
        SOURCE,
        "0x" + "1" * 64,
        0,
        1,
        "0x" + "f" * 64,
        EXPIRES - timedelta(minutes=5),
        USDC,
        ADDRESS,
        ADDRESS,
        60,
    )
    assert intent.apply_deposit(first, token_supported=True).disposition is Disposition.CREDITED
    assert (intent.status, intent.funding) == (IntentStatus.PENDING, FundingStatus.UNDERFUNDED)
    assert intent.shortfall() == 40
    top_up = Deposit(
        SOURCE,
        "0x" + "2" * 64,
        0,
        2,
        "0x" + "f" * 64,
        EXPIRES - timedelta(minutes=4),
        USDC,
        ADDRESS,
        ADDRESS,
        40,
    )
    intent.apply_deposit(top_up, token_supported=True)
    assert (intent.status, intent.funding) == (IntentStatus.FUNDED, FundingStatus.EXACT)
    late = Deposit(
        SOURCE,
        "0x" + "3" * 64,
        0,
        3,
        "0x" + "f" * 64,
        EXPIRES - timedelta(minutes=3),
        USDC,
        ADDRESS,
        ADDRESS,
        5,
    )
    decision = intent.apply_deposit(late, token_supported=True)
    assert decision.reason is RefundReason.LATE_DEPOSIT
    assert intent.received == 100


def test_overpayment_is_funded_with_excess() -> None:
    intent = new_intent(100)
    deposit = Deposit(
        SOURCE, "0x" + "1" * 64, -1, 1, "0x" + "f" * 64, EXPIRES, USDC, ADDRESS, ADDRESS, 130
    )
    intent.apply_deposit(deposit, token_supported=True)
    assert (intent.status, intent.funding, intent.excess()) == (
        IntentStatus.FUNDED,
        FundingStatus.OVERFUNDED,
        30,
    )


def test_a_prefill_failing_after_initiation_refunds_only_what_is_still_held() -> None:
    """150 received on 100 due: 50 back at initiation, 100 (not 150) when the prefill fails."""
    intent = new_intent(100)
    deposit = Deposit(
        SOURCE, "0x" + "1" * 64, -1, 1, "0x" + "f" * 64, EXPIRES, USDC, ADDRESS, ADDRESS, 150
    )
    intent.apply_deposit(deposit, token_supported=True)
    intent.prefill_sent(tx_hash="0x" + "2" * 64, relayer=ADDRESS)
    intent.prefill_failed()
    refunds = [(a.reason, a.amount) for a in intent.actions if a.reason is not None]
    assert refunds == [(RefundReason.EXCESS, 50), (RefundReason.FAILED, 100)]
    assert (intent.held(), intent.refunded) == (0, 150)


@given(st.lists(st.integers(1, 100), min_size=1, max_size=6), st.integers(1, 400), st.data())
def test_retraction_undoes_a_credit_while_reversible(
    amounts: list[int], total: int, data: st.DataObject
) -> None:
    intent = new_intent(total)
    applied = []
    for i, amount in enumerate(amounts):
        d = Deposit(
            SOURCE, f"0x{i:064x}", 0, i, "0x" + "f" * 64, EXPIRES, USDC, ADDRESS, ADDRESS, amount
        )
        if intent.apply_deposit(d, token_supported=True).disposition is Disposition.CREDITED:
            applied.append(d)
    victim = data.draw(st.sampled_from(applied))
    before = intent.received
    assert intent.retract(victim)
    assert intent.received == before - victim.amount
    assert (intent.status is IntentStatus.FUNDED) == (intent.received >= total)


def test_retraction_after_initiation_is_refused() -> None:
    intent = new_intent(10)
    d = Deposit(SOURCE, "0x" + "1" * 64, 0, 1, "0x" + "f" * 64, EXPIRES, USDC, ADDRESS, ADDRESS, 10)
    intent.apply_deposit(d, token_supported=True)
    intent.status = IntentStatus.INITIATED
    assert not intent.retract(d)
    assert intent.received == 10


def pay(
    intent: Intent, amount: int, *, token: str = USDC, seconds: int = -60, n: int = 1
) -> Disposition:
    deposit = Deposit(
        SOURCE,
        f"0x{n:064x}",
        0,
        n,
        "0x" + "f" * 64,
        EXPIRES + timedelta(seconds=seconds),
        token,
        ADDRESS,
        ADDRESS,
        amount,
    )
    return intent.apply_deposit(deposit, token_supported=True, min_sweep=50).disposition


def with_minimum(total: int, fees: int = 0) -> Intent:
    intent = new_intent(total)
    intent.terms = replace(intent.terms, min_sweep=50, fees=fees, amount_out=total - fees)
    return intent


def test_dust_after_completion_is_retained_not_refunded() -> None:
    intent = with_minimum(100)
    assert pay(intent, 100) is Disposition.CREDITED
    intent.prefill_sent(tx_hash="0x" + "2" * 64, relayer=ADDRESS)
    intent.prefill_confirmed(block_number=1, fee_account="")
    intent.actions.clear()
    assert pay(intent, 1, n=2) is Disposition.RETAINED  # late, below the minimum
    assert pay(intent, 49, token=USDT, n=3) is Disposition.RETAINED  # wrong token
    assert pay(intent, 50, n=4) is Disposition.REFUND_OWED  # worth refunding
    assert [(a.reason, a.amount) for a in intent.actions] == [(RefundReason.LATE_DEPOSIT, 50)]
    assert [(k.token, k.amount, k.reason) for k in intent.retained] == [
        (USDC, 1, RefundReason.LATE_DEPOSIT),
        (USDT, 49, RefundReason.WRONG_TOKEN),
    ]


def test_a_small_excess_is_refunded_if_the_prefill_fails_and_retained_if_it_succeeds() -> None:
    failing, succeeding = with_minimum(100), with_minimum(100)
    for intent in (failing, succeeding):
        pay(intent, 130)
        intent.prefill_sent(tx_hash="0x" + "2" * 64, relayer=ADDRESS)
        assert intent.actions[1:] == [] and intent.retained == []  # 30 < 50: still held
    failing.prefill_failed()
    assert [(a.reason, a.amount) for a in failing.actions[1:]] == [(RefundReason.FAILED, 130)]
    assert failing.retained == []
    succeeding.prefill_confirmed(block_number=1, fee_account="")
    assert [(k.amount, k.reason) for k in succeeding.retained] == [(30, RefundReason.EXCESS)]
    assert [a.kind.value for a in succeeding.actions] == ["prefill", "relayer_refund"]


def test_a_small_fee_is_retained_not_swept() -> None:
    intent = with_minimum(1_000, fees=30)
    pay(intent, 1_000)
    intent.prefill_sent(tx_hash="0x" + "2" * 64, relayer=ADDRESS)
    intent.prefill_confirmed(block_number=1, fee_account="0x" + "4" * 40)
    kinds = [(a.kind.value, a.amount) for a in intent.actions]
    assert kinds == [("prefill", 970), ("relayer_refund", 970)]
    assert [(k.kind.value, k.amount) for k in intent.retained] == [("fee_sweep", 30)]


def test_an_expired_intent_holding_less_than_the_minimum_ends_expired() -> None:
    intent = with_minimum(100)
    pay(intent, 20)
    assert intent.expire(EXPIRES + timedelta(seconds=1))
    assert intent.status is IntentStatus.EXPIRED and intent.actions == []
    assert [(k.amount, k.reason) for k in intent.retained] == [(20, RefundReason.EXPIRED)]
