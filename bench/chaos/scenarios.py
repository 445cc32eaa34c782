"""What the chaos run pays, and what every account must hold afterwards (pure).

Eight scenarios, dealt round-robin so that every one occurs when N >= 8:

| scenario | payments to the intent address | what intentd must do |
|---|---|---|
| exact | the total due, in ``tokenIn`` | prefill, relayer refund, fee sweep |
| top_up | a third, then the rest a few seconds later | as exact |
| over | the total plus 1..5 USDC | as exact, and the excess refunded |
| under_expiry | half the total, then nothing | refunded at expiry |
| nothing_expiry | nothing | expired, nothing moves |
| late | the total, after the intent expired | expired; the deposit refunded (late) |
| wrong_token | the total in USDT (supported, not ``tokenIn``) | refunded (wrong token); expired |
| wrong_chain | the total in USDC on the destination chain | refunded there (wrong token); expired |

Amounts are in base units (6 decimals). The expected balances follow docs/intents.md:
the recipient gets ``amount_out`` of ``tokenOut`` from the relayer; the relayer is repaid
``total_due - fees`` on the source chain; the fees (route and application fee) go to the
fee account; every refund goes to the refund address; the intent address keeps none of
the test tokens (every amount here is above ``min_sweep``).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

UNIT = 10**6
SCENARIOS = (
    "exact",
    "top_up",
    "over",
    "under_expiry",
    "nothing_expiry",
    "late",
    "wrong_token",
    "wrong_chain",
)
COMPLETING = frozenset({"exact", "top_up", "over"})
SHORT_LIVED = frozenset(SCENARIOS) - COMPLETING
TERMINAL: dict[str, set[tuple[str, str | None]]] = {
    "exact": {("intent_completed", None)},
    "top_up": {("intent_completed", None)},
    "over": {("intent_completed", None)},
    # the deposit may be decided after the expiry loop ran (a role was down): then it is
    # a late deposit of an EXPIRED intent, refunded all the same
    "under_expiry": {("intent_refunded", "expired"), ("intent_expired", None)},
    "nothing_expiry": {("intent_expired", None)},
    "late": {("intent_expired", None)},
    "wrong_token": {("intent_expired", None)},
    "wrong_chain": {("intent_expired", None)},
}
"""The terminal event (type, refund reason) each scenario may end with."""

Key = tuple[str, str, str]
"""(chain, token symbol, lowercase owner)."""


@dataclass(frozen=True)
class Plan:
    """One intent of the run, before it exists."""

    index: int
    scenario: str
    amount: int  # what the recipient is asked to get, base units
    extra: int  # the excess of ``over``
    payer: int  # index of the paying account
    recipient: str
    refund_address: str
    pause: float  # seconds between the two payments of a top-up


@dataclass(frozen=True)
class Payment:
    chain: str  # "source" or "destination"
    token: str  # "USDC" or "USDT"
    amount: int
    phase: int  # 0 at once, 1 after the pause, 2 after the expiry


@dataclass
class Created:
    """A plan with the intent intentd created for it."""

    plan: Plan
    intent_id: int
    intent_address: str
    total_due: int
    fees: int
    amount_out: int
    payments: list[Payment] = field(default_factory=list)


def plans(seed: int, count: int, payers: int) -> list[Plan]:
    rng = random.Random(seed)
    made = []
    for index in range(count):
        made.append(
            Plan(
                index=index,
                scenario=SCENARIOS[index % len(SCENARIOS)],
                amount=rng.randint(1, 50) * UNIT + rng.randint(0, 99) * 10**4,
                extra=rng.randint(1, 5) * UNIT,
                payer=rng.randrange(payers),
                recipient="0x" + rng.randbytes(20).hex(),
                refund_address="0x" + rng.randbytes(20).hex(),
                pause=rng.uniform(2.0, 6.0),
            )
        )
    return made


def payments(plan: Plan, total: int) -> list[Payment]:
    """What is paid to the intent of ``plan``, whose total due is ``total``."""
    src, dst = "source", "destination"
    return {
        "exact": [Payment(src, "USDC", total, 0)],
        "top_up": [
            Payment(src, "USDC", total // 3, 0),
            Payment(src, "USDC", total - total // 3, 1),
        ],
        "over": [Payment(src, "USDC", total + plan.extra, 0)],
        "under_expiry": [Payment(src, "USDC", total // 2, 0)],
        "nothing_expiry": [],
        "late": [Payment(src, "USDC", total, 2)],
        "wrong_token": [Payment(src, "USDT", total, 0)],
        "wrong_chain": [Payment(dst, "USDC", total, 0)],
    }[plan.scenario]


def expected_changes(
    created: list[Created], relayer: str, fee_account: str, payers: list[str]
) -> Counter[Key]:
    """The change of every test-token balance the run touches, in base units."""
    change: Counter[Key] = Counter()
    relayer, fee_account = relayer.lower(), fee_account.lower()
    for c in created:
        plan = c.plan
        for p in c.payments:
            change[(p.chain, p.token, payers[plan.payer].lower())] -= p.amount
            change[(p.chain, p.token, c.intent_address)] += p.amount
            change[(p.chain, p.token, c.intent_address)] -= p.amount  # swept clean
        refund = ("source", "USDC", plan.refund_address)
        if plan.scenario in COMPLETING:
            change[("destination", "USDC", plan.recipient)] += c.amount_out
            change[("destination", "USDC", relayer)] -= c.amount_out
            change[("source", "USDC", relayer)] += c.total_due - c.fees
            change[("source", "USDC", fee_account)] += c.fees
            if plan.scenario == "over":
                change[refund] += plan.extra
        elif plan.scenario == "under_expiry":
            change[refund] += c.total_due // 2
        elif plan.scenario == "late":
            change[refund] += c.total_due
        elif plan.scenario == "wrong_token":
            change[("source", "USDT", plan.refund_address)] += c.total_due
        elif plan.scenario == "wrong_chain":
            change[("destination", "USDC", plan.refund_address)] += c.total_due
        for chain in ("source", "destination"):
            for token in ("USDC", "USDT"):
                change[(chain, token, c.intent_address)] += 0
                change[(chain, token, plan.recipient)] += 0
                change[(chain, token, plan.refund_address)] += 0
    return change
