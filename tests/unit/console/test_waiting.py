"""Why a payment waits (``console.waiting``): one row per situation intentd knows."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from intentd.console.waiting import (
    ActionFact,
    ChainFact,
    ErrorKind,
    Facts,
    Reason,
    TxFact,
    Why,
    classify_error,
    why_waiting,
)
from intentd.domain.status import IntentStatus

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CHAINS = {
    "BASE": ChainFact(
        confirmations=3, poll_interval=1.0, cursor_block=100, cursor_at=NOW, executor_running=True
    ),
    "ARB": ChainFact(
        confirmations=5, poll_interval=1.0, cursor_block=500, cursor_at=NOW, executor_running=True
    ),
}
BASE = Facts(
    status=IntentStatus.PENDING,
    received=0,
    total_due=10_000_000,
    decimals=6,
    symbol="USDC",
    source_chain="BASE",
    destination_chain="ARB",
    expires_at=NOW + timedelta(minutes=30),
    grace=timedelta(minutes=2),
    now=NOW,
    chains=CHAINS,
)
PREFILL = ActionFact(kind="prefill", chain="ARB", status="ready")


def facts(**changes: object) -> Facts:
    return replace(BASE, **changes)  # type: ignore[arg-type]


def reasons(found: list[Why]) -> list[Reason]:
    return [w.reason for w in found]


CASES: list[tuple[str, Facts, list[Why]]] = [
    (
        "unpaid, before expiry",
        facts(),
        [
            Why(
                Reason.AWAITING_PAYMENT,
                {
                    "symbol": "USDC",
                    "chain": "BASE",
                    "due": "10",
                    "until": (NOW + timedelta(minutes=30)).isoformat(),
                },
            )
        ],
    ),
    (
        "under-paid",
        facts(received=4_000_000),
        [
            Why(
                Reason.UNDERPAID,
                {"symbol": "USDC", "chain": "BASE", "missing": "6", "received": "4"},
            )
        ],
    ),
    (
        "past expiry, within the grace",
        facts(expires_at=NOW - timedelta(seconds=30)),
        [
            Why(
                Reason.WAITING_TO_EXPIRE,
                {
                    "symbol": "USDC",
                    "chain": "BASE",
                    "until": (NOW + timedelta(seconds=90)).isoformat(),
                },
            )
        ],
    ),
    (
        "funded, the prefill about to be sent",
        facts(status=IntentStatus.FUNDED, received=10_000_000, actions=[PREFILL]),
        [Why(Reason.AWAITING_EXECUTOR, {"chain": "ARB", "kind": "prefill"})],
    ),
    (
        "funded, no executor on the destination chain",
        facts(
            status=IntentStatus.FUNDED,
            actions=[PREFILL],
            chains={**CHAINS, "ARB": replace(CHAINS["ARB"], executor_running=False)},
        ),
        [Why(Reason.NO_EXECUTOR, {"chain": "ARB"})],
    ),
    (
        "funded, waiting for the second provider",
        facts(
            status=IntentStatus.FUNDED,
            actions=[
                replace(
                    PREFILL,
                    last_error="second_provider: deposits not confirmed by the second provider:"
                    " block 7 not seen",
                )
            ],
        ),
        [Why(Reason.AWAITING_SECOND_PROVIDER, {"chain": "BASE"})],
    ),
    (
        "funded, the relayer short on the destination chain",
        facts(
            status=IntentStatus.FUNDED,
            actions=[replace(PREFILL, last_error="liquidity_short: the relayer lacks 3 USDC")],
        ),
        [Why(Reason.RELAYER_SHORT, {"chain": "ARB"})],
    ),
    (
        "funded, fees above the cap",
        facts(
            status=IntentStatus.FUNDED,
            actions=[replace(PREFILL, last_error="fee_cap: base fee 900 gwei is above the cap")],
        ),
        [Why(Reason.FEES_ABOVE_CAP, {"chain": "ARB"})],
    ),
    (
        "funded, an attempt failed and is retried",
        facts(
            status=IntentStatus.FUNDED,
            actions=[replace(PREFILL, last_error="nonce too low", attempts=2)],
        ),
        [
            Why(
                Reason.RETRYING,
                {"chain": "ARB", "kind": "prefill", "error": "nonce too low", "attempts": 2},
            )
        ],
    ),
    (
        "initiated, the prefill sent and not mined",
        facts(
            status=IntentStatus.INITIATED,
            actions=[replace(PREFILL, status="submitted", txs=[TxFact("sent", None)])],
        ),
        [Why(Reason.TRANSACTION_PENDING, {"chain": "ARB", "kind": "prefill"})],
    ),
    (
        "initiated, mined two blocks below the head: 2 of 5",
        # cursor 500 with 5 confirmations: the head is about 504; block 503 has 2.
        facts(
            status=IntentStatus.INITIATED,
            actions=[replace(PREFILL, status="submitted", txs=[TxFact("mined", 503)])],
        ),
        [Why(Reason.AWAITING_CONFIRMATIONS, {"k": 2, "n": 5})],
    ),
    (
        "held by a reorg",
        facts(
            status=IntentStatus.REFUNDING,
            holds=["BASE"],
            actions=[ActionFact(kind="user_refund", chain="BASE", status="held")],
        ),
        [Why(Reason.HELD_BY_REORG, {"chain": "BASE"})],
    ),
    (
        "refunding, the refund failed for good",
        facts(
            status=IntentStatus.REFUNDING,
            actions=[
                ActionFact(
                    kind="user_refund",
                    chain="BASE",
                    status="failed",
                    last_error="gas estimate reverted",
                )
            ],
        ),
        [
            Why(
                Reason.ACTION_FAILED,
                {"chain": "BASE", "kind": "user_refund", "error": "gas estimate reverted"},
            )
        ],
    ),
    (
        "a chain not read for five minutes",
        facts(
            chains={**CHAINS, "BASE": replace(CHAINS["BASE"], cursor_at=NOW - timedelta(minutes=5))}
        ),
        [
            Why(
                Reason.AWAITING_PAYMENT,
                {
                    "symbol": "USDC",
                    "chain": "BASE",
                    "due": "10",
                    "until": (NOW + timedelta(minutes=30)).isoformat(),
                },
            ),
            Why(Reason.RPC_UNAVAILABLE, {"chain": "BASE"}),
        ],
    ),
    (
        "a refund waiting for approval comes first",
        facts(status=IntentStatus.FUNDED, approval_pending=True, actions=[PREFILL]),
        [
            Why(Reason.APPROVAL_PENDING),
            Why(Reason.AWAITING_EXECUTOR, {"chain": "ARB", "kind": "prefill"}),
        ],
    ),
]


@pytest.mark.parametrize(("facts_", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_why_waiting(facts_: Facts, expected: list[Why]) -> None:
    assert why_waiting(facts_) == expected


@pytest.mark.parametrize(
    "status",
    [IntentStatus.COMPLETED, IntentStatus.EXPIRED, IntentStatus.REFUNDED, IntentStatus.CANCELLED],
)
def test_an_ended_payment_waits_for_nothing(status: IntentStatus) -> None:
    assert why_waiting(facts(status=status, holds=["BASE"], approval_pending=True)) == []


def test_a_quiet_chain_on_which_nothing_waits_is_not_reported() -> None:
    stale = {**CHAINS, "ARB": replace(CHAINS["ARB"], cursor_at=NOW - timedelta(hours=1))}
    assert Reason.RPC_UNAVAILABLE not in reasons(why_waiting(facts(chains=stale)))


def test_a_slow_chain_is_given_fifty_poll_intervals() -> None:
    slow = {
        **CHAINS,
        "BASE": replace(CHAINS["BASE"], poll_interval=12.0, cursor_at=NOW - timedelta(minutes=5)),
    }
    assert Reason.RPC_UNAVAILABLE not in reasons(why_waiting(facts(chains=slow)))


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (None, None),
        # the executor's waits, by their codes (domain.wait_codes), matched exactly
        (
            "second_provider: deposits not confirmed by the second provider: x",
            ErrorKind.SECOND_PROVIDER,
        ),
        ("liquidity_short: the relayer lacks 3 USDC", ErrorKind.RELAYER_SHORT),
        ("fee_cap: base fee 900 wei is at or above the cap 500 wei", ErrorKind.FEE_CAP),
        ("node_lags: balance read at block 7 < 9 (node lags)", ErrorKind.RPC),
        ("below_gas: amount 5 wei does not cover 21000 gas", ErrorKind.OTHER),
        ("execution reverted", ErrorKind.OTHER),
        # free text is never read for words (it was, before the codes)
        ("insufficient funds for gas * price + value", ErrorKind.OTHER),
        ("relayer liquidity short on ARB", ErrorKind.OTHER),
        ("maxFeePerGas above max_fee_per_gas", ErrorKind.OTHER),
        ("RPC timed out", ErrorKind.OTHER),
    ],
)
def test_classify_error(error: str | None, kind: ErrorKind | None) -> None:
    assert classify_error(error) is kind
