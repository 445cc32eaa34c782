"""The intent aggregate: every rule of DESIGN.md §2, as pure code.

An :class:`Intent` changes its own state and records what follows: public events
(:class:`~intentd.domain.events.PendingEvent`) and actions that move money
(:class:`PendingAction`). Handlers load an intent, call one method, and store the
intent, its events and its actions in one database transaction.

Deposits (:meth:`Intent.apply_deposit`):

- a supported token other than ``tokenIn``, or any token on a chain other than the
  source chain: a refund is owed (``wrong_token``);
- ``tokenIn`` on the source chain while PENDING, in a block not after ``expires_at``:
  credited; ``intent_funded`` follows every credit; when the total is covered the
  intent is FUNDED and the prefill action is recorded. An intent whose amount was
  converted at a price (``Terms.owed``) is first revalued at the credit's prices
  (:mod:`intentd.domain.valuation`: its total may be raised, its ``amount_out`` is the
  owed amount at those prices); without a trusted price it is credited but stays
  PENDING (``awaiting_price``) until :meth:`Intent.value_awaiting` values it: never a
  covered total decided on a missing price;
- ``tokenIn`` after the intent left PENDING, or in a block after ``expires_at``: a
  refund is owed (``late_deposit``);
- a token the chain does not list: ignored (anyone can emit a fake ``Transfer``).

Amounts too small to move (below the token's ``min_sweep``: moving them would cost
more gas than they are worth) are *retained* at the intent address instead of
refunded or swept: a late or wrong-token deposit below it is ``retained``; an excess
or a fee below it is not moved, nor is what an expired intent holds (it ends
EXPIRED). Each retention is recorded in :attr:`Intent.retained` for the caller to
report. A failed prefill always refunds what is held. Anyone can send dust to a
used intent address; retention means it never costs the gas tank anything.

Execution: the prefill sent → INITIATED (``intent_initiated``; the excess of an
over-funded intent is refunded now); confirmed → COMPLETED (``intent_completed``;
the relayer is repaid from the deposit, the fees go to the fee account); failed →
REFUNDING with what is still held for the user refunded (``failed``). Expiry of a
PENDING intent: nothing received (or less than ``min_sweep``) → EXPIRED
(``intent_expired``); more → REFUNDING with all of it refunded (``expired``).

The merchant's commands (:meth:`Intent.cancel`, :meth:`Intent.refund_on_request`):
cancelling a PENDING intent ends it as expiry does, with its own names: nothing held
(or less than ``min_sweep``) → CANCELLED (``intent_cancelled``); more → REFUNDING with
all of it refunded (``cancelled``). A refund on request is only for a FUNDED intent
whose prefill the caller has withdrawn before any transaction of it could be mined:
REFUNDING with everything held refunded (``merchant``). Any other state raises
:class:`~intentd.domain.status.IllegalTransition`.

Every confirmed user refund emits ``intent_refunded``; one of reason ``expired``,
``failed``, ``cancelled`` or ``merchant`` also ends the intent as REFUNDED. So every
intent that ends has exactly one terminal event (:func:`~intentd.domain.events.is_terminal`).

Every refund of credited ``tokenIn`` is of what is still held for the user,
:meth:`Intent.held`: ``received`` less ``refunded``, the part of it the intent has
already decided to refund (an over-funded intent's excess, refunded at initiation,
is not refunded again when the prefill then fails). ``refunded`` is stored with the
intent (the intent is reloaded from its row for every message).

Money invariant (checked by the property tests): what was received on the intent
address = relayer refund + fees + user refunds + what is still held there; and at
every step the refunds decided never exceed what was received less what goes to the
relayer and the fee account.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any

# An action's types are defined in domain.actions; re-exported for existing importers.
from intentd.domain.actions import NATIVE as NATIVE  # noqa: PLC0414
from intentd.domain.actions import ActionKind as ActionKind  # noqa: PLC0414
from intentd.domain.actions import PendingAction as PendingAction  # noqa: PLC0414
from intentd.domain.actions import RefundReason as RefundReason  # noqa: PLC0414
from intentd.domain.actions import SignerKind as SignerKind  # noqa: PLC0414
from intentd.domain.deposits import Deposit, Disposition
from intentd.domain.events import ENDING_REFUND_REASONS, EventType
from intentd.domain.intent_state import DepositDecision, IntentState, Retained, Terms
from intentd.domain.status import IllegalTransition, IntentStatus, funding_status
from intentd.domain.valuation import Rate, Revaluation, revalue

__all__ = ["ENDING_REASONS", "DepositDecision", "Intent", "Retained", "Terms"]

ENDING_REASONS = ENDING_REFUND_REASONS
"""Refunds whose confirmation ends the intent as REFUNDED (``expired``, ``failed``)."""


class Intent(IntentState):
    """An intent's changing state; methods apply one fact and record what follows."""

    __slots__ = ()

    # --- deposits -------------------------------------------------------------------
    def apply_deposit(
        self,
        deposit: Deposit,
        *,
        token_supported: bool,
        min_sweep: int = 0,
        rate: Rate | None = None,
    ) -> DepositDecision:
        """Decide and apply one deposit; ``token_supported``: the chain lists its token,
        ``min_sweep``: its token's minimum refund (base units), ``rate``: the prices now
        (a revalued intent without one is credited but not covered: it awaits a price)."""
        terms = self.terms
        if not token_supported:
            return DepositDecision(Disposition.IGNORED)
        if deposit.chain != terms.source_chain or deposit.token != terms.token_in:
            return self._owe(deposit, RefundReason.WRONG_TOKEN, min_sweep)
        if self.status is not IntentStatus.PENDING or deposit.block_time > terms.expires_at:
            return self._owe(deposit, RefundReason.LATE_DEPOSIT, min_sweep)
        self.received += deposit.amount
        self._decide(rate, deposit)
        return DepositDecision(Disposition.CREDITED)

    def value_awaiting(self, rate: Rate) -> bool:
        """Value a PENDING intent that awaits a price at ``rate``, as its last credit would
        have been (``intent_funded`` without a deposit); False if it awaits none."""
        if self.status is not IntentStatus.PENDING or not self.awaiting_price:
            return False
        self._decide(rate, None)
        return True

    def _decide(self, rate: Rate | None, deposit: Deposit | None) -> None:
        """After a credit: revalue (when the intent is revalued), then FUNDED and the
        prefill when the total is covered; ``intent_funded`` either way."""
        terms = self.terms
        valuation: dict[str, Any] | None = None
        if terms.owed is None:
            covered = self.received >= terms.total_due
        elif rate is None:
            self.awaiting_price = True
            covered = False
            valuation = {"status": "awaiting_price"}
        else:
            found = revalue(
                terms.owed, rate, total_due=terms.total_due, fees=terms.fees,
                decimals_in=terms.decimals_in, decimals_out=terms.decimals_out,
            )  # fmt: skip
            self.terms = terms = replace(
                terms, total_due=found.total_due, amount_out=found.amount_out
            )
            self.awaiting_price = False
            covered = self.received >= terms.total_due
            valuation = self.valuation = self._valuation(found, covered)
        self.funding = funding_status(self.received, terms.total_due)
        if covered:
            self._move(IntentStatus.FUNDED)
        extra = {} if valuation is None else {"valuation": valuation}
        self._record(EventType.INTENT_FUNDED, deposit=deposit, extra=extra)
        if covered:
            self.actions.append(
                PendingAction(
                    ActionKind.PREFILL,
                    terms.destination_chain,
                    terms.token_out,
                    terms.amount_out,
                    terms.recipient,
                    SignerKind.RELAYER,
                )
            )

    def _valuation(self, found: Revaluation, covered: bool) -> dict[str, Any]:
        """What ``data.valuation`` of the event says (base units)."""
        owed = self.terms.owed
        assert owed is not None
        return {
            "status": "valued",
            **found.rate.as_json(),
            "owed": {"amount": _plain(owed.amount), "symbol": owed.symbol},
            "slippage": _plain(owed.slippage),
            "principal": found.principal,
            "amount_out": found.amount_out,
            "total_due": found.total_due,
            "raised": found.raised,
            "tolerance": found.tolerance,
            "relayer_bears": found.relayer_bears if covered else 0,
            "destination": self.terms.destination_chain,
            "token_out": self.terms.token_out,
        }

    def _owe(self, deposit: Deposit, reason: RefundReason, min_sweep: int) -> DepositDecision:
        if deposit.amount < min_sweep:
            self.retained.append(
                Retained(
                    ActionKind.USER_REFUND, deposit.chain, deposit.token, deposit.amount, reason
                )
            )
            return DepositDecision(Disposition.RETAINED, reason)
        self._refund(deposit.amount, reason, deposit.chain, deposit.token)
        return DepositDecision(Disposition.REFUND_OWED, reason)

    def retract(self, deposit: Deposit) -> bool:
        """Un-credit a credited deposit; False if something irreversible happened (alert).

        A FUNDED intent whose prefill is not yet sent falls back to PENDING; the caller
        must cancel the prefill action (it can, as long as nothing was signed).
        """
        if self.status not in (IntentStatus.PENDING, IntentStatus.FUNDED):
            return False
        if deposit.amount > self.held():
            raise ValueError(
                f"retracting {deposit.amount} exceeds the {self.received} credited to "
                f"intent {self.id}"
            )
        self.received -= deposit.amount
        self.funding = funding_status(self.received, self.terms.total_due)
        if self.status is IntentStatus.FUNDED and self.received < self.terms.total_due:
            self._move(IntentStatus.PENDING)
        return True

    # --- time -----------------------------------------------------------------------
    def expire(self, now: datetime) -> bool:
        """End a PENDING intent past ``expires_at``; False if it is not due."""
        if self.status is not IntentStatus.PENDING or now < self.terms.expires_at:
            return False
        held = self.held()
        if held == 0 or held < self.terms.min_sweep:
            self._move(IntentStatus.EXPIRED)
            self._record(EventType.INTENT_EXPIRED)
            if held:
                self._retain(ActionKind.USER_REFUND, held, RefundReason.EXPIRED)
        else:
            self._move(IntentStatus.REFUNDING)
            self._refund_credit(held, RefundReason.EXPIRED)
        return True

    # --- the merchant's commands ----------------------------------------------------------
    def cancel(self) -> None:
        """The merchant stops a PENDING intent: it takes no more payments (a later one is
        a late deposit) and what it holds goes back, as on expiry."""
        if self.status is not IntentStatus.PENDING:
            raise IllegalTransition(self.status, IntentStatus.CANCELLED)
        held = self.held()
        if held == 0 or held < self.terms.min_sweep:
            self._move(IntentStatus.CANCELLED)
            self._record(EventType.INTENT_CANCELLED)
            if held:
                self._retain(ActionKind.USER_REFUND, held, RefundReason.CANCELLED)
        else:
            self._move(IntentStatus.REFUNDING)
            self._refund_credit(held, RefundReason.CANCELLED)

    def refund_on_request(self) -> None:
        """The merchant gives a FUNDED intent up: everything held goes back (reason
        ``merchant``). The caller must first have withdrawn the prefill (it may only do
        so while no transaction of the prefill can still be mined)."""
        if self.status is not IntentStatus.FUNDED:
            raise IllegalTransition(self.status, IntentStatus.REFUNDING)
        held = self.held()
        if held <= 0:  # FUNDED means received >= total_due > 0: a broken invariant
            raise ValueError(f"intent {self.id}: FUNDED but nothing is held")
        self._move(IntentStatus.REFUNDING)
        self._refund_credit(held, RefundReason.MERCHANT)

    # --- execution results ------------------------------------------------------------
    def prefill_sent(self, *, tx_hash: str, relayer: str) -> None:
        """The prefill is broadcast: INITIATED; an over-funded intent's excess goes back."""
        if not relayer:
            raise ValueError(f"intent {self.id}: a prefill needs a relayer address")
        self._move(IntentStatus.INITIATED)
        self.tx_hash = tx_hash
        self.relayer = relayer
        self._record(EventType.INTENT_INITIATED, extra={"prefill": {"tx_hash": tx_hash}})
        excess = self.held() - self.terms.total_due
        if excess >= max(self.terms.min_sweep, 1):
            self._refund_credit(excess, RefundReason.EXCESS)
        # a smaller excess stays held for the user: a failed prefill refunds it with the
        # rest; a confirmed one leaves it retained

    def prefill_confirmed(self, *, block_number: int, fee_account: str) -> None:
        """The recipient has the funds: COMPLETED; the relayer is repaid, fees swept."""
        self._move(IntentStatus.COMPLETED)
        self._record(
            EventType.INTENT_COMPLETED,
            extra={"prefill": {"tx_hash": self.tx_hash, "block_number": block_number}},
        )
        terms = self.terms
        kept = self.held() - terms.total_due  # an excess too small to refund at initiation
        if kept > 0:
            self._retain(ActionKind.USER_REFUND, kept, RefundReason.EXCESS)
        fees = terms.fees if fee_account else 0
        repay = terms.total_due - fees
        if repay > 0:
            self.actions.append(
                PendingAction(
                    ActionKind.RELAYER_REFUND,
                    terms.source_chain,
                    terms.token_in,
                    repay,
                    self.relayer,
                    SignerKind.INTENT,
                )
            )
        if 0 < fees < terms.min_sweep:
            self._retain(ActionKind.FEE_SWEEP, fees)
        elif fees > 0:
            self.actions.append(
                PendingAction(
                    ActionKind.FEE_SWEEP,
                    terms.source_chain,
                    terms.token_in,
                    fees,
                    fee_account,
                    SignerKind.INTENT,
                )
            )

    def prefill_failed(self) -> None:
        """The prefill cannot succeed: what is still held for the user goes back."""
        self._move(IntentStatus.REFUNDING)
        held = self.held()
        if held > 0:
            self._refund_credit(held, RefundReason.FAILED)

    def refund_confirmed(
        self,
        *,
        reason: RefundReason,
        chain: str,
        token: str,
        amount: int,
        amount_sent: int,
        gas_cost: int,
        tx_hash: str,
    ) -> None:
        """A user refund is on chain: ``intent_refunded``; expired/failed ones end the intent."""
        if reason in ENDING_REASONS and self.status is IntentStatus.REFUNDING:
            self._move(IntentStatus.REFUNDED)
        self._record(
            EventType.INTENT_REFUNDED,
            extra={
                "refund": {
                    "reason": reason.value,
                    "chain": chain,
                    "token": token,
                    "amount": amount,
                    "amount_sent": amount_sent,
                    "gas_cost": gas_cost,
                    "tx_hash": tx_hash,
                }
            },
        )


def _plain(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text == "-0" else text
