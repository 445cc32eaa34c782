"""The chaos run's pure parts: the fault schedule, the ETH expectations, log counting."""

from __future__ import annotations

from collections import Counter

import pytest
from bench.chaos.faults import CLASSES, DB, RPC, FaultOptions, parse_classes
from bench.chaos.scenarios import Created, Payment, Plan, expected_native, payments
from bench.chaos.watch import count_levels


def test_fault_groups_expand_and_unknown_classes_are_refused() -> None:
    assert parse_classes("rpc,db,broker") == CLASSES
    assert parse_classes("db-cut, lag") == ("lag", "db-cut")
    assert parse_classes("db") == DB and parse_classes("rpc") == RPC
    with pytest.raises(ValueError, match="unknown fault class 'disk'"):
        parse_classes("rpc,disk")


def test_every_class_gets_its_bursts_within_the_bounds_the_same_for_a_seed() -> None:
    options = FaultOptions(classes=CLASSES, bursts=3, seconds=(2.0, 5.0))
    schedule = options.schedule(7)
    assert Counter(c for c, _ in schedule) == dict.fromkeys(CLASSES, 3)
    assert all(2.0 <= s <= 5.0 for _, s in schedule)
    assert schedule == options.schedule(7) != options.schedule(8)


def made(scenario: str, total: int, fees: int, extra: int = 0) -> Created:
    plan = Plan(0, scenario, total - fees, extra, 0, "0x" + "aa" * 20, "0x" + "bb" * 20, 1.0)
    created = Created(plan, 1, "0x" + "cc" * 20, total, fees, total - fees)
    created.payments = payments(plan, total)
    return created


def test_eth_expectations_count_each_prefill_and_refund_once() -> None:
    relayer, fee_account = "0x" + "11" * 20, "0x" + "22" * 20
    over = made("eth_over", 10**16, 10**14, extra=10**15)
    under = made("eth_under_expiry", 10**16, 10**14)
    small_fees = made("eth_exact", 10**15, 10**13)  # below a min_sweep of 5 * 10**13
    balances, gross, paid_in = expected_native(
        [over, under, small_fees], relayer, fee_account, 5 * 10**13
    )
    recipient = ("destination", "ETH", "0x" + "aa" * 20)
    refund = ("source", "ETH", "0x" + "bb" * 20)
    assert balances[recipient] == gross[recipient] == (10**16 - 10**14) + (10**15 - 10**13)
    assert gross[refund] == 10**15 + 10**16 // 2  # the excess and the half refunded
    assert gross[("source", "ETH", relayer)] == (10**16 - 10**14) + (10**15 - 10**13)
    assert gross[("source", "ETH", fee_account)] == 10**14  # 10**13 is retained
    assert paid_in[("source", "ETH", "0x" + "cc" * 20)] == (10**16 + 10**15) + 10**16 // 2 + 10**15


def test_log_lines_are_counted_by_level_and_unstructured_lines_apart() -> None:
    lines = [
        b'{"event": "x", "level": "error"}',
        b'{"event": "y", "level": "warning"}',
        b'{"event": "z", "level": "info"}',
        b"Traceback (most recent call last):",
        b"",
    ]
    assert count_levels(lines) == Counter(error=1, warning=1, raw=1)


def test_eth_expectations_follow_the_revalued_figures_and_the_top_ups() -> None:
    """An ETH intent credited after a drop beyond its slippage: its total raised, its
    payer tops up the difference, the recipient gets the amount at the lower price; an
    over-payment gets back only what the raised total left of it."""
    relayer, fee_account = "0x" + "11" * 20, "0x" + "22" * 20
    raised = made("eth_exact", 10**16 + 10**14, 10**14)
    raised.quoted = raised.total_due
    raised.total_due, raised.amount_out = 11_111_111_111_111_112 + 10**14, 11_111_111_111_111_112
    raised.payments.append(Payment("source", "ETH", raised.total_due - raised.quoted, 3))
    over = made("eth_over", 10**16 + 10**14, 10**14, extra=2 * 10**15)
    over.total_due, over.amount_out = 11_111_111_111_111_112 + 10**14, 11_111_111_111_111_112
    balances, gross, paid_in = expected_native([raised, over], relayer, fee_account, 5 * 10**13)
    recipient = ("destination", "ETH", "0x" + "aa" * 20)
    assert balances[recipient] == 2 * 11_111_111_111_111_112
    assert gross[("source", "ETH", relayer)] == 2 * 11_111_111_111_111_112
    refund = ("source", "ETH", "0x" + "bb" * 20)
    assert gross[refund] == 2 * 10**15 - 1_111_111_111_111_112  # what the raise left
    intent = ("source", "ETH", "0x" + "cc" * 20)
    assert paid_in[intent] == raised.total_due + 10**16 + 10**14 + 2 * 10**15
