"""What the chaos run pays, and what every account must hold afterwards (pure).

Twelve scenarios, dealt round-robin so that every one occurs when N >= 12 (``--scenarios``
picks some):

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
| eth_exact, eth_top_up, eth_over, eth_under_expiry | as exact ... in ETH (native) | as theirs |

Amounts are in base units (6 decimals). The expected balances follow docs/intents.md:
the recipient gets ``amount_out`` of ``tokenOut`` from the relayer; the relayer is repaid
``total_due - fees`` on the source chain; the fees (route and application fee) go to the
fee account; every refund goes to the refund address; the intent address keeps none of
the test tokens (every amount here is above ``min_sweep``).

Native (ETH) intents are read differently (the deposits come from full blocks, not
logs) and their sweeps pay their own gas out of the amount (docs/execution.md, Who pays
for gas), so their money is checked as: every recipient's ETH to the wei
(``amount_out``), and, per receiving account, the *gross* of the mined transfers to it
(the amount of the action each carries) against :func:`expected_native`: a refund or a
prefill paid twice shows even when intentd recorded both.

ETH intents ask for the USDC draw in **USD** (1 to 50.99 USD), paid in ETH at the price
of the run's ETH / USD feed, which the run moves meanwhile: each is revalued when its
payments are credited (docs/pricing.md, *Slippage*). Their figures (total due, amount
out) are then those the lifecycle decided, recomputed by the check from the prices it
recorded with each credit (``check.revalued``); a completing intent whose total was
raised beyond its payments is topped up by its payer (``Created.top_ups``), as a wallet
following its events would.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

UNIT = 10**6
WEI_PER_UNIT = 10**9
"""ETH amounts are the USDC draws times this: 1 USDC base unit -> 10^9 wei."""
SCENARIOS = (
    "exact",
    "top_up",
    "over",
    "under_expiry",
    "nothing_expiry",
    "late",
    "wrong_token",
    "wrong_chain",
    "eth_exact",
    "eth_top_up",
    "eth_over",
    "eth_under_expiry",
)
NATIVE = frozenset({"eth_exact", "eth_top_up", "eth_over", "eth_under_expiry"})
COMPLETING = frozenset({"exact", "top_up", "over", "eth_exact", "eth_top_up", "eth_over"})
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
TERMINAL |= {f"eth_{name}": TERMINAL[name] for name in ("exact", "top_up", "over", "under_expiry")}
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

    @property
    def usd(self) -> str | None:
        """What an ETH intent asks for, in USD (the USDC draw); None for the others."""
        if self.scenario not in NATIVE:
            return None
        return format(Decimal(self.amount // WEI_PER_UNIT) / UNIT, "f")


@dataclass(frozen=True)
class Payment:
    chain: str  # "source" or "destination"
    token: str  # "USDC" or "USDT"
    amount: int
    phase: int  # 0 at once, 1 after the pause, 2 after the expiry


@dataclass
class Created:
    """A plan with the intent intentd created for it. For a revalued (ETH) intent,
    ``total_due`` and ``amount_out`` are replaced by the figures the lifecycle decided
    once the run has settled (``check.revalued``); ``quoted`` stays the creation's."""

    plan: Plan
    intent_id: int
    intent_address: str
    total_due: int
    fees: int
    amount_out: int
    payments: list[Payment] = field(default_factory=list)
    quoted: int = 0
    """The total due at creation (what the payments of the plan are computed from)."""

    @property
    def paid(self) -> int:
        return sum(p.amount for p in self.payments)


def plans(seed: int, count: int, payers: int, scenarios: tuple[str, ...] = SCENARIOS) -> list[Plan]:
    rng = random.Random(seed)
    made = []
    for index in range(count):
        scenario = scenarios[index % len(scenarios)]
        scale = WEI_PER_UNIT if scenario in NATIVE else 1
        made.append(
            Plan(
                index=index,
                scenario=scenario,
                amount=(rng.randint(1, 50) * UNIT + rng.randint(0, 99) * 10**4) * scale,
                extra=rng.randint(1, 5) * UNIT * scale,
                payer=rng.randrange(payers),
                recipient="0x" + rng.randbytes(20).hex(),
                refund_address="0x" + rng.randbytes(20).hex(),
                pause=rng.uniform(2.0, 6.0),
            )
        )
    return made


def probe_plan(seed: int, index: int, payers: int) -> Plan:
    """An ``exact`` intent the run creates and pays the moment a fault burst is over, to
    time when events flow again (``bench/chaos/watch.py``); checked like any other."""
    rng = random.Random(f"probe-{seed}-{index}")
    return Plan(
        index=1_000_000 + index,
        scenario="exact",
        amount=rng.randint(1, 50) * UNIT,
        extra=0,
        payer=rng.randrange(payers),
        recipient="0x" + rng.randbytes(20).hex(),
        refund_address="0x" + rng.randbytes(20).hex(),
        pause=0.0,
    )


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
        "eth_exact": [Payment(src, "ETH", total, 0)],
        "eth_top_up": [
            Payment(src, "ETH", total // 3, 0),
            Payment(src, "ETH", total - total // 3, 1),
        ],
        "eth_over": [Payment(src, "ETH", total + plan.extra, 0)],
        "eth_under_expiry": [Payment(src, "ETH", total // 2, 0)],
    }[plan.scenario]


def expected_changes(
    created: list[Created], relayer: str, fee_account: str, payers: list[str]
) -> Counter[Key]:
    """The change of every test-token balance the run touches, in base units."""
    change: Counter[Key] = Counter()
    relayer, fee_account = relayer.lower(), fee_account.lower()
    for c in created:
        plan = c.plan
        if plan.scenario in NATIVE:
            continue  # see expected_native
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


def expected_native(
    created: list[Created], relayer: str, fee_account: str, min_sweep: int
) -> tuple[Counter[Key], Counter[Key], Counter[Key]]:
    """(recipients' ETH balances, gross ETH paid to each account by intentd's transfers,
    ETH paid to each intent address by the payers), keyed (chain side, "ETH", owner).

    The gross of a transfer is the amount of its action: a native sweep's value is that
    less the gas it reserves (``gas_limit * maxFeePerGas``); a prefill's is the amount.
    """
    balances: Counter[Key] = Counter()
    gross: Counter[Key] = Counter()
    paid_in: Counter[Key] = Counter()
    relayer, fee_account = relayer.lower(), fee_account.lower()
    for c in created:
        plan = c.plan
        if plan.scenario not in NATIVE:
            continue
        gross[("source", "ETH", relayer)] += 0
        gross[("source", "ETH", fee_account)] += 0
        for p in c.payments:
            paid_in[(p.chain, "ETH", c.intent_address)] += p.amount
        recipient = ("destination", "ETH", plan.recipient)
        refund = ("source", "ETH", plan.refund_address)
        balances[recipient] += 0
        gross[recipient] += 0
        gross[refund] += 0
        if plan.scenario in COMPLETING:
            balances[recipient] += c.amount_out
            gross[recipient] += c.amount_out
            gross[("source", "ETH", relayer)] += c.total_due - c.fees
            if c.fees >= min_sweep:
                gross[("source", "ETH", fee_account)] += c.fees
            excess = c.paid - c.total_due  # an over-payment, less what a raise took
            if excess >= max(min_sweep, 1):
                gross[refund] += excess
        elif plan.scenario == "eth_under_expiry" and c.paid >= min_sweep:
            gross[refund] += c.paid
    return balances, gross, paid_in
