"""Samples of what the contract describes, from the real builders: an intent record,
the envelope of every event type (from a domain lifecycle), and the Kafka messages."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.unit.lifecycle.lifecycle_builders import (
    DESTINATION,
    NOW,
    RELAYER,
    SOURCE,
    USDC,
    USDT,
    deposit,
    intent_row,
    tx,
)

from intentd.chain.transfers import ChainTransfer
from intentd.contract.events import Envelope, envelope
from intentd.contract.record import IntentRecord, render_record
from intentd.domain.actions import RefundReason
from intentd.domain.events import PendingEvent
from intentd.domain.intent import Intent
from intentd.indexer.publishing import deposit_payload
from intentd.messages import ActionResultMessage, action_result_id, encode

ROW = intent_row(7, total_due=1_000_000, fees=10_000)


def record() -> IntentRecord:
    """A record with every optional field set and one with them empty."""
    return render_record(
        replace(ROW, sender="0x" + "5" * 40, tx_hash=tx(9), session_id="s_1", relayer=RELAYER)
    )


def _events() -> list[PendingEvent]:
    """Every event type, from the domain: paid in two parts (the second over), initiated,
    completed, the excess refunded; another intent expired, a third cancelled."""
    paid = ROW.intent(min_sweep=10)
    for n, amount in ((1, 400_000), (2, 700_000)):
        paid.apply_deposit(
            deposit(ROW.intent_address, amount, n=n), token_supported=True, min_sweep=10
        )
    paid.prefill_sent(tx_hash=tx(3), relayer=RELAYER)
    paid.prefill_confirmed(block_number=40, fee_account=RELAYER)
    paid.refund_confirmed(
        reason=RefundReason.EXCESS,
        chain=SOURCE,
        token=USDC,
        amount=100_000,
        amount_sent=99_000,
        gas_cost=21_000,
        tx_hash=tx(4),
    )
    wrong: Intent = ROW.intent()
    wrong.refund_confirmed(
        reason=RefundReason.WRONG_TOKEN,
        chain=SOURCE,
        token=USDT,
        amount=5,
        amount_sent=5,
        gas_cost=0,
        tx_hash=tx(5),
    )
    expired = ROW.intent()
    assert expired.expire(ROW.expires_at + timedelta(seconds=1))
    cancelled = ROW.intent()
    cancelled.cancel()
    return [*paid.events, *wrong.events, *expired.events, *cancelled.events]


def envelopes() -> list[Envelope]:
    """The envelope of every event :func:`_events` records, live and test."""
    return [
        envelope(
            event,
            intent_id=ROW.id,
            record=record(),
            decimals=6,
            created_at=NOW,
            mode="live" if event.sequence % 2 else "test",
            decimals_of=lambda chain, token: 18 if token == USDT else 6,
        )
        for event in _events()
    ]


def deposit_message() -> bytes:
    transfer = ChainTransfer(
        block_number=12,
        block_hash=tx(12),
        block_time=1_790_000_000,
        tx_hash=tx(1),
        tx_index=0,
        log_index=3,
        token=USDC,
        from_address="0x" + "9" * 40,
        to_address=ROW.intent_address,
        amount=10**24,
        transfer_index=0,
    )
    return deposit_payload(SOURCE, 1, transfer, observed_at_ms=1_790_000_000_123)


def action_results() -> list[bytes]:
    sent = ActionResultMessage(
        id=action_result_id(3, "sent"),
        action_id=3,
        intent_id=ROW.id,
        action_kind="prefill",
        event="sent",
        chain=DESTINATION,
        tx_hash=tx(3),
    )
    confirmed = sent.model_copy(
        update={
            "id": action_result_id(3, "confirmed"),
            "event": "confirmed",
            "block_number": 40,
            "amount_sent": 990_000,
            "gas_cost": 21_000 * 10**9,
        }
    )
    failed = sent.model_copy(
        update={"id": action_result_id(3, "failed"), "event": "failed", "error": "reverted"}
    )
    return [encode(m) for m in (sent, confirmed, failed)]
