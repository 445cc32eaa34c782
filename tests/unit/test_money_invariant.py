"""The money invariant of DESIGN.md §2, over random lifecycles.

For every intent and every (chain, token) of a supported token: everything received
on the intent address = relayer refund + fees + user refunds + what is still held
there; the address is never asked to pay more than it holds; each action is executed
once; and once every action has run and the intent is settled, nothing is held but
amounts below the token's minimum (``MIN_SWEEP``), each retained by rule. Its events
are numbered without gaps, and an intent in a terminal status has exactly one terminal
event, the one of that status, after which only refunds of other reasons follow.
Deposits arrive in any order and time, expiry strikes at any moment, and the
prefill may fail before it is broadcast or after (INITIATED -> REFUNDING). The
merchant may cancel at any moment (only a PENDING intent accepts it) and ask for a
refund at any moment (only a FUNDED intent whose prefill has not been taken by the
executor accepts it: the API withdraws the ``ready`` prefill first).

At every step, what the intent has *decided* to pay out of its address (user
refunds, relayer refund, fees; executed or still queued) never exceeds what was
received there: a refund is only ever of what is still held for the user. The
intent is reloaded from what the store keeps (:func:`reload`) after every step, as
the lifecycle does for every message, so state the store does not keep is lost here
too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from intentd.domain.deposits import Deposit, Disposition
from intentd.domain.events import EventType, PendingEvent, is_terminal
from intentd.domain.intent import (
    ActionKind,
    Intent,
    PendingAction,
    RefundReason,
    SignerKind,
    Terms,
)
from intentd.domain.status import FundingStatus, IllegalTransition, IntentStatus
from intentd.domain.valuation import Owed, Rate, tolerance

SOURCE, OTHER = "BASE_TESTNET", "ARBITRUM_TESTNET"
USDC, USDT, ROGUE = "0x" + "a" * 40, "0x" + "b" * 40, "0x" + "c" * 40
RELAYER, FEE_ACCOUNT, REFUND = "0x" + "1" * 40, "0x" + "2" * 40, "0x" + "3" * 40
EXPIRES = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
TOTAL, FEES = 1_000, 30
MIN_SWEEP = {USDC: 25, USDT: 40}
"""Each token's minimum refund or sweep; below it an amount is retained."""
TERMINAL = {
    IntentStatus.COMPLETED,
    IntentStatus.EXPIRED,
    IntentStatus.REFUNDED,
    IntentStatus.CANCELLED,
}
ENDED_BY = {
    IntentStatus.COMPLETED: EventType.INTENT_COMPLETED,
    IntentStatus.EXPIRED: EventType.INTENT_EXPIRED,
    IntentStatus.CANCELLED: EventType.INTENT_CANCELLED,
    IntentStatus.REFUNDED: EventType.INTENT_REFUNDED,
}
"""The type of the terminal event of an intent that ends in each terminal status."""


def ends(event: PendingEvent) -> bool:
    return is_terminal(event.type, event.extra.get("refund", {}).get("reason"))


STORED = (
    "received",
    "status",
    "funding",
    "event_sequence",
    "tx_hash",
    "relayer",
    "refunded",
    "awaiting_price",
)
"""The fields of an intent that ``intent_store.save_intent`` writes (besides its terms)."""


def reload(intent: Intent) -> Intent:
    """The intent as the next message finds it: only what the store keeps."""
    blank = Intent(intent.id, intent.terms, 0, IntentStatus.PENDING, FundingStatus.NONE, 0)
    return replace(blank, **{name: getattr(intent, name) for name in STORED})


class Lifecycle(RuleBasedStateMachine):
    OWED: Owed | None = None
    """What the recipient is owed, for an intent revalued at its payments."""

    def __init__(self) -> None:
        super().__init__()
        self.price: Decimal | None = Decimal(1)
        self.intent = Intent(
            id=7,
            terms=Terms(
                source_chain=SOURCE,
                destination_chain=OTHER,
                token_in=USDC,
                token_out=USDC,
                total_due=TOTAL,
                fees=FEES,
                amount_out=TOTAL - FEES,
                recipient=REFUND,
                refund_address=REFUND,
                expires_at=EXPIRES,
                min_sweep=MIN_SWEEP[USDC],
                owed=self.OWED,
                decimals_in=6,
                decimals_out=6,
            ),
            received=0,
            status=IntentStatus.PENDING,
            funding=FundingStatus.NONE,
            event_sequence=0,
        )
        self.received: Counter[tuple[str, str]] = Counter()
        self.paid: Counter[tuple[str, str]] = Counter()
        self.by_kind: Counter[ActionKind] = Counter()
        self.decided: Counter[tuple[str, str]] = Counter()
        self.retained: Counter[tuple[str, str]] = Counter()
        self.queue: list[PendingAction] = []
        self.events: list[PendingEvent] = []
        self.prefill_in_flight = False
        self.executed = 0
        self.expired_tick = False
        self.tx = 0

    def _take_actions(self) -> None:
        for action in self.intent.actions:
            if action.signer is SignerKind.INTENT:
                self.decided[(action.chain, action.token)] += action.amount
        for kept in self.intent.retained:
            assert kept.amount < MIN_SWEEP[kept.token], kept
            self.retained[(kept.chain, kept.token)] += kept.amount
        self.queue.extend(self.intent.actions)
        self.events.extend(self.intent.events)
        self.intent = reload(self.intent)

    @rule(
        chain=st.sampled_from([SOURCE, SOURCE, SOURCE, OTHER]),
        token=st.sampled_from([USDC, USDC, USDC, USDT, ROGUE]),
        amount=st.integers(1, 700) | st.integers(TOTAL, TOTAL + 300),  # often over-funds
        late=st.booleans(),
    )
    def deposit(self, chain: str, token: str, amount: int, late: bool) -> None:
        self.tx += 1
        when = EXPIRES + timedelta(seconds=1 if (late or self.expired_tick) else -60)
        deposit = Deposit(
            chain,
            f"0x{self.tx:064x}",
            0,
            self.tx,
            "0x" + "f" * 64,
            when,
            token,
            "0x" + "9" * 40,
            "0x" + "8" * 40,
            amount,
        )
        decision = self.intent.apply_deposit(
            deposit, token_supported=token != ROGUE, min_sweep=MIN_SWEEP.get(token, 0),
            rate=self.rate(),
        )  # fmt: skip
        if decision.disposition is not Disposition.IGNORED:
            self.received[(chain, token)] += amount
        if self.intent.valuation is not None and self.intent.valuation["raised"]:
            event("the total raised by a price drop")
        if self.intent.valuation is not None and self.intent.valuation["relayer_bears"]:
            event("a move borne by the relayer")
        self._take_actions()

    def rate(self) -> Rate | None:
        return None if self.price is None else Rate(self.price, Decimal(1))

    @rule()
    def expiry_strikes(self) -> None:
        self.expired_tick = True
        self.intent.expire(EXPIRES + timedelta(seconds=1))
        self._take_actions()

    @precondition(lambda self: self.tx > 0)  # cancelling at once would end most runs early
    @rule(now=st.integers(0, 2))
    def merchant_cancels(self, now: int) -> None:
        if now:  # the merchant waits
            return
        was = self.intent.status
        try:
            self.intent.cancel()
        except IllegalTransition:
            assert was is not IntentStatus.PENDING
            assert not self.intent.events and not self.intent.actions
            return
        event("cancelled " + ("with a refund" if self.intent.actions else "holding no refund"))
        self._take_actions()

    @rule()
    def merchant_asks_for_a_refund(self) -> None:
        """The API withdraws a prefill still waiting (``ready``), then asks the intent."""
        waiting = [a for a in self.queue if a.kind is ActionKind.PREFILL]
        if self.intent.status is not IntentStatus.FUNDED or not waiting:
            return  # 409: nothing to refund on request, or the prefill may be in flight
        self.queue.remove(waiting[0])  # ready -> cancelled
        self.intent.refund_on_request()
        event("refunded on request")
        self._take_actions()

    @precondition(lambda self: bool(self.queue))
    @rule(index=st.integers(0, 10), prefill_broadcast=st.booleans())
    def executor_runs_an_action(self, index: int, prefill_broadcast: bool) -> None:
        action = self.queue.pop(index % len(self.queue))
        self.executed += 1
        tx_hash = f"0x{self.executed:064x}"
        if action.kind is ActionKind.PREFILL:
            assert action.signer is SignerKind.RELAYER
            if self.intent.status is not IntentStatus.FUNDED:
                return
            terms = self.intent.terms
            bears = action.amount - (terms.total_due - terms.fees)  # the relayer's share
            assert action.amount == terms.amount_out
            assert bears <= (0 if self.OWED is None else tolerance(action.amount, Decimal("0.01")))
            if prefill_broadcast:  # "sent"; "confirmed" or "failed" follows later
                self.intent.prefill_sent(tx_hash=tx_hash, relayer=RELAYER)
                self.prefill_in_flight = True
            else:  # failed before any broadcast (the estimate reverted, say)
                self.intent.prefill_failed()
        else:
            assert action.signer is SignerKind.INTENT
            key = (action.chain, action.token)
            self.paid[key] += action.amount
            self.by_kind[action.kind] += action.amount
            if action.kind is ActionKind.USER_REFUND:
                assert action.to_address == REFUND
                assert action.reason is not None
                self.intent.refund_confirmed(
                    reason=action.reason,
                    chain=action.chain,
                    token=action.token,
                    amount=action.amount,
                    amount_sent=action.amount,
                    gas_cost=0,
                    tx_hash=tx_hash,
                )
            elif action.kind is ActionKind.RELAYER_REFUND:
                assert action.to_address == RELAYER
            else:
                assert action.to_address == FEE_ACCOUNT
        self._take_actions()

    @precondition(lambda self: self.prefill_in_flight)
    @rule(succeeds=st.booleans())
    def prefill_outcome(self, succeeds: bool) -> None:
        """The broadcast prefill is mined, or fails for good (the relayer ran low)."""
        self.prefill_in_flight = False
        if succeeds:
            self.intent.prefill_confirmed(block_number=1, fee_account=FEE_ACCOUNT)
        else:
            event(
                "prefill failed after initiation"
                + (" (excess refunded)" * bool(self.intent.refunded))
            )
            self.intent.prefill_failed()
        self._take_actions()

    @invariant()
    def never_decides_to_pay_out_more_than_it_received(self) -> None:
        # user refunds <= received - relayer refund - fees, for every (chain, token)
        for key, decided in self.decided.items():
            assert decided <= self.received[key], (key, decided, self.received[key])

    @invariant()
    def never_pays_out_more_than_it_holds(self) -> None:
        for key, paid in self.paid.items():
            assert paid <= self.received[key], (key, paid, self.received[key])

    @invariant()
    def events_are_numbered_without_gaps(self) -> None:
        assert [e.sequence for e in self.events] == list(range(1, len(self.events) + 1))

    @invariant()
    def a_terminal_status_has_exactly_one_terminal_event(self) -> None:
        ending = [i for i, e in enumerate(self.events) if ends(e)]
        if self.intent.status not in TERMINAL:
            assert ending == [], (self.intent.status, ending)
            return
        assert len(ending) == 1, (self.intent.status, [self.events[i] for i in ending])
        last = self.events[ending[0]]
        assert last.type is ENDED_BY[self.intent.status], (self.intent.status, last.type)
        for later in self.events[ending[0] + 1 :]:
            assert later.type is EventType.INTENT_REFUNDED, later

    def teardown(self) -> None:
        # Let the world finish: run every remaining action, let expiry strike, repeat.
        for _ in range(50):
            if self.prefill_in_flight:
                self.prefill_outcome(succeeds=True)
            elif self.queue:
                self.executor_runs_an_action(0, prefill_broadcast=True)
            elif self.intent.status is IntentStatus.PENDING:
                self.expiry_strikes()
            else:
                break
        assert not self.queue
        assert self.intent.status in TERMINAL, self.intent.status
        # everything received = relayer refund + fees + user refunds + what was retained
        for key in self.received:
            assert self.received[key] == self.paid[key] + self.retained[key], key
        total = self.intent.terms.total_due  # raised by a revaluation, never lowered
        assert total >= TOTAL and (self.OWED is not None or total == TOTAL)
        if self.intent.status is IntentStatus.COMPLETED:
            assert self.by_kind[ActionKind.RELAYER_REFUND] == total - FEES
            assert self.by_kind[ActionKind.FEE_SWEEP] == FEES
            assert self.intent.received >= total
        else:
            assert self.by_kind[ActionKind.RELAYER_REFUND] == 0
            assert self.by_kind[ActionKind.FEE_SWEEP] == 0
        self.a_terminal_status_has_exactly_one_terminal_event()
        dust = self.intent.status is IntentStatus.EXPIRED and self.intent.held() > 0
        event(f"ended {self.intent.status.value}" + (" holding dust" * dust))
        types = [e.type for e in self.events]
        assert types.count(EventType.INTENT_INITIATED) <= 1
        assert types.count(EventType.INTENT_COMPLETED) <= 1
        refunds = [e for e in self.events if e.type is EventType.INTENT_REFUNDED]
        reasons = [e.extra["refund"]["reason"] for e in refunds]
        assert reasons.count(RefundReason.EXPIRED.value) <= 1
        assert reasons.count(RefundReason.EXCESS.value) <= 1
        assert reasons.count(RefundReason.CANCELLED.value) <= 1
        assert reasons.count(RefundReason.MERCHANT.value) <= 1


TestLifecycle = Lifecycle.TestCase
TestLifecycle.settings = settings(max_examples=300, stateful_step_count=25, deadline=None)


PRICES = st.sampled_from(["0.8", "0.99", "0.995", "0.998", "1", "1.0005", "1.3", None])
"""The token's USD price when a payment is credited (None: not trusted then)."""


class RevaluedLifecycle(Lifecycle):
    """The same, for an intent owed 0.00097 USD-units (970 base units at 1 USD) with 1 %
    slippage, whose token's price moves between payments and is sometimes not trusted
    (the payment then awaits a price, valued later or refunded at expiry)."""

    OWED = Owed(Decimal("0.00097"), "USD", Decimal("0.01"))

    @initialize(price=PRICES)
    def priced_at(self, price: str | None) -> None:
        self.price_moves(price)

    @rule(price=PRICES)
    def price_moves(self, price: str | None) -> None:
        self.price = None if price is None else Decimal(price)

    @rule()
    def lifecycle_values_what_awaits_a_price(self) -> None:
        rate = self.rate()
        if rate is not None and self.intent.value_awaiting(rate):
            event("a payment awaiting a price valued")
            self._take_actions()


TestRevaluedLifecycle = RevaluedLifecycle.TestCase
TestRevaluedLifecycle.settings = settings(max_examples=300, stateful_step_count=25, deadline=None)
