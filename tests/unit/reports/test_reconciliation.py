"""The reconciliation on books the real domain produced: balanced when every record is
right, and a mismatch listed for any one figure off by one.

The books come from ``world.play`` (random lives of an intent through
``domain.intent.Intent``, executed with signed bytes and receipts); the examples below
name the cases a merchant's accountant would ask about.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.reports.world import (
    ADDRESS,
    DESTINATION,
    FEE_ACCOUNT,
    MIN_SWEEP,
    RECIPIENT,
    RELAYER,
    SOURCE,
    USDC,
    USDC_OUT,
    USDT,
    World,
    new_world,
    play,
    signed_bytes,
    transfer_data,
)

from intentd.domain.actions import NATIVE
from intentd.reports.books import Check, IntentBooks, TxRecord
from intentd.reports.reconciliation import ENDED, reconcile
from intentd.reports.signed_transfers import decode


def checks(books: IntentBooks) -> list[Check]:
    return [m.check for m in reconcile(books).mismatches]


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_the_books_of_any_life_balance_to_the_base_unit(data: st.DataObject) -> None:
    world = play(data)
    books = world.books()
    result = reconcile(books)
    if books.terms.status not in ENDED:
        return
    assert result.mismatches == ()
    assert all(line.balanced for line in result.lines)
    due = books.terms.amount_out if books.terms.status == "COMPLETED" else 0
    assert result.recipient_got == due
    # every deposit of the user's money is in a line, and nothing else is
    received = sum(line.received for line in result.lines)
    assert received == sum(
        d.amount for d in books.deposits if d.disposition in ("credited", "refund_owed", "retained")
    )


def _corruptions(world: World) -> list[tuple[str, IntentBooks]]:
    """Every recorded figure the reconciliation must cross-check, each off by one."""
    books = world.books()
    terms = books.terms
    found: list[tuple[str, IntentBooks]] = []

    def with_terms(label: str, **changes: int) -> None:
        found.append((label, replace(books, terms=replace(terms, **changes))))

    with_terms("intent.received", received=terms.received + 1)
    if terms.refunded:
        with_terms("intent.refunded", refunded=terms.refunded - 1)
    if terms.status == "COMPLETED":
        with_terms("intent.amount_out", amount_out=terms.amount_out + 1)
    for i, deposit in enumerate(books.deposits):
        if deposit.disposition in ("credited", "refund_owed"):
            changed = list(books.deposits)
            changed[i] = replace(deposit, amount=deposit.amount + 1)
            found.append((f"deposit {deposit.id}.amount", replace(books, deposits=tuple(changed))))
    for i, action in enumerate(books.actions):
        checked = action.status == "confirmed" or (
            action.kind == "user_refund" and action.status != "cancelled"
        )
        fields = {"amount": action.amount + 1}
        if action.status == "confirmed":
            fields |= {"amount_sent": (action.amount_sent or 0) - 1}
            fields |= {"gas_cost": (action.gas_cost or 0) + 1}
        for name, value in fields.items() if checked else ():
            changed = list(books.actions)
            changed[i] = replace(action, **{name: value})
            found.append((f"action {action.id}.{name}", replace(books, actions=tuple(changed))))
    for i, tx in enumerate(books.transactions):
        if tx.purpose != "transfer" or tx.signed is None:
            continue
        changed = list(books.transactions)
        changed[i] = replace(tx, gas_used=(tx.gas_used or 0) + 1)
        found.append((f"tx {tx.tx_hash}.gas_used", replace(books, transactions=tuple(changed))))
        changed = list(books.transactions)
        changed[i] = replace(tx, signed=_moved_one_more(tx))
        found.append((f"tx {tx.tx_hash} bytes", replace(books, transactions=tuple(changed))))
    return found


def _moved_one_more(tx: TxRecord) -> object:
    signed = tx.signed
    assert signed is not None
    if signed.data:
        recipient = "0x" + signed.data[16:36].hex()
        amount = int.from_bytes(signed.data[36:68], "big") + 1
        return decode(signed_bytes(signed.to, 0, transfer_data(recipient, amount), 0))
    return decode(signed_bytes(signed.to, signed.value + 1, b"", 0))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_figure_off_by_one_is_listed(data: st.DataObject) -> None:
    world = play(data)
    if world.intent.status.value not in ENDED:
        return
    for label, books in _corruptions(world):
        assert checks(books), f"{label} off by one went unnoticed"


# --- the cases by name ---------------------------------------------------------------


def completed(total: int = 1_000_000, fees: int = 10_000, paid: int = 1_000_000) -> World:
    world = new_world(native=False, total=total, fees=fees)
    world.pay(paid)
    world.act("sent")
    world.act("confirmed")
    for index in range(len(world.actions)):
        world.execute(index, gas_used=5, price=2)
    return world


def test_a_completed_intent_with_fees_and_an_excess() -> None:
    world = completed(paid=1_200_000)
    result = reconcile(world.books())
    assert result.mismatches == ()
    [line] = result.lines
    assert (line.chain, line.token) == (SOURCE, USDC)
    assert (line.received, line.relayer_repaid, line.fees_swept, line.refunded) == (
        1_200_000,
        990_000,
        10_000,
        200_000,
    )
    assert (line.retained, line.held) == (0, 0)
    assert result.recipient_got == 990_000


def test_a_refund_recorded_one_unit_off_is_listed() -> None:
    world = completed(paid=1_200_000)
    books = world.books()
    index = next(i for i, a in enumerate(books.actions) if a.reason == "excess")
    actions = list(books.actions)
    actions[index] = replace(actions[index], amount=actions[index].amount + 1)
    found = reconcile(replace(books, actions=tuple(actions))).mismatches
    assert {m.check for m in found} == {Check.CREDIT_REFUNDS, Check.TRANSACTION}
    credit = next(m for m in found if m.check is Check.CREDIT_REFUNDS)
    assert (credit.expected, credit.found) == (200_000, 200_001)
    assert all(m.intent_address == ADDRESS for m in found)


def test_a_recipient_paid_twice_is_listed() -> None:
    world = completed()
    books = world.books()
    winner = next(t for t in books.transactions if t.signer == RELAYER)
    twice = replace(winner, tx_hash="0x" + "9" * 64)
    found = reconcile(replace(books, transactions=(*books.transactions, twice))).mismatches
    assert {m.check for m in found} == {Check.RECIPIENT, Check.TRANSACTION}
    paid = next(m for m in found if m.check is Check.RECIPIENT)
    assert (paid.chain, paid.token, paid.expected, paid.found) == (
        DESTINATION,
        USDC_OUT,
        990_000,
        1_980_000,
    )


def test_a_prefill_paid_on_a_refunded_intent_is_listed() -> None:
    world = new_world(native=False, total=1_000_000, fees=0)
    world.pay(1_000_000)
    world.act("sent")
    prefill = next(i for i, a in enumerate(world.actions) if a.kind == "prefill")
    world.execute(prefill, gas_used=5, price=2)  # mined after all ...
    world.actions[prefill] = replace(world.actions[prefill], status="failed")  # ... reported failed
    world.intent.prefill_failed()
    world._record_actions(1)
    for index in range(len(world.actions)):
        world.execute(index, gas_used=5, price=2)
    assert world.intent.status.value == "REFUNDED"
    found = checks(world.books())
    assert Check.RECIPIENT in found and Check.TRANSACTION in found


def test_a_sweep_to_another_address_is_listed() -> None:
    world = completed()
    books = world.books()
    index = next(i for i, t in enumerate(books.transactions) if t.signer == ADDRESS)
    tx = books.transactions[index]
    elsewhere = decode(signed_bytes(USDC, 0, transfer_data("0x" + "e" * 40, 990_000), 0))
    changed = list(books.transactions)
    changed[index] = replace(tx, signed=elsewhere)
    found = reconcile(replace(books, transactions=tuple(changed))).mismatches
    assert [m.check for m in found] == [Check.TRANSACTION]  # the money left, to someone else
    assert "0xeeee" in found[0].detail


def test_dust_stays_and_is_reported_as_retained() -> None:
    """Fees below min_sweep, an excess below it, a late deposit below it: all retained."""
    world = new_world(native=False, total=1_000, fees=MIN_SWEEP - 1)
    world.pay(1_000 + MIN_SWEEP - 1)
    world.act("sent")
    world.act("confirmed")
    world.pay(MIN_SWEEP - 1, late=True)
    world.pay(MIN_SWEEP - 1, token=USDT)
    for index in range(len(world.actions)):
        world.execute(index, gas_used=5, price=2)
    result = reconcile(world.books())
    assert result.mismatches == ()
    lines = {(line.token): line for line in result.lines}
    assert lines[USDC].retained == 3 * (MIN_SWEEP - 1)  # fees, excess, late deposit
    assert lines[USDC].relayer_repaid == 1_000 - (MIN_SWEEP - 1)
    assert lines[USDT].retained == MIN_SWEEP - 1


def test_an_unexecuted_sweep_is_held_not_missing() -> None:
    world = new_world(native=False, total=1_000_000, fees=10_000)
    world.pay(1_000_000)
    world.act("sent")
    world.act("confirmed")
    repay = next(i for i, a in enumerate(world.actions) if a.kind == "relayer_refund")
    world.execute(repay, gas_used=5, price=2)  # the fee sweep is still ready
    result = reconcile(world.books())
    assert result.mismatches == ()
    assert (result.lines[0].fees_swept, result.lines[0].held) == (0, 10_000)


def test_a_native_sweep_pays_its_gas_from_its_amount() -> None:
    world = new_world(native=True, total=10_000, fees=0)
    world.pay(10_000 + 5_000)
    world.act("sent")
    world.act("confirmed_no_fee_account")
    for index in range(len(world.actions)):
        world.execute(index, gas_used=4, price=2)
    result = reconcile(world.books())
    assert result.mismatches == ()
    [line] = result.lines
    assert line.token == NATIVE
    # two sweeps (excess refund, repayment): each burned 8 and left 15 - 8 = 7 reserved
    assert (line.gas_from_amount, line.retained) == (16, 14)
    assert line.relayer_repaid == 10_000 - 15 and line.refunded == 5_000 - 15


def test_repaid_in_full_without_a_fee_account_balances() -> None:
    world = new_world(native=False, total=1_000_000, fees=10_000)
    world.pay(1_000_000)
    world.act("sent")
    world.act("confirmed_no_fee_account")
    for index in range(len(world.actions)):
        world.execute(index, gas_used=5, price=2)
    result = reconcile(world.books())
    assert result.mismatches == ()
    assert result.lines[0].relayer_repaid == 1_000_000


@pytest.mark.parametrize("status", ["EXPIRED", "CANCELLED"])
def test_an_ended_intent_holding_more_than_dust_is_listed(status: str) -> None:
    world = new_world(native=False, total=1_000, fees=0)
    world.pay(MIN_SWEEP - 1)
    world.act("expire" if status == "EXPIRED" else "cancel")
    books = world.books()
    assert reconcile(books).mismatches == ()
    held = replace(books.terms, received=MIN_SWEEP, status=status)
    deposits = (replace(books.deposits[0], amount=MIN_SWEEP),)
    found = reconcile(replace(books, terms=held, deposits=deposits)).mismatches
    assert [m.check for m in found] == [Check.RETAINED]


def test_fee_account_in_the_lines() -> None:
    world = completed()
    fee = next(a for a in world.books().actions if a.kind == "fee_sweep")
    assert (fee.to_address, fee.amount) == (FEE_ACCOUNT, 10_000)
    assert RECIPIENT != FEE_ACCOUNT
