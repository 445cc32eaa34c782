"""The reconciliation of one ended intent: does every recorded figure agree?

Pure: integers in base units, no I/O, no floats. For an intent that ended (COMPLETED,
REFUNDED, EXPIRED or CANCELLED), :func:`reconcile` checks, from its books
(:class:`~intentd.reports.books.IntentBooks`: the intent row, its deposits, its actions
and the recorded transactions with their receipts' figures):

1. **The recipient got what was due**: a COMPLETED intent has exactly one confirmed
   prefill of its terms, and the recorded bytes of that confirmed transaction pay
   ``amount_out`` of ``tokenOut`` to the recipient; an intent that did not complete paid
   the recipient nothing.
2. **The intent address balances**, per chain and token (:class:`LedgerLine`): what it
   received (deposits of the user's money) = the relayer's repayment + the fees swept +
   the refunds (what the confirmed transactions moved, read from their bytes) + the gas a
   native sweep paid from its amount (receipts) + the dust retained by the rules + what
   is still held (decided, not yet confirmed). The dust is computed from the intent's
   own totals (``received``, ``refunded``, ``total_due``, fees), not as a remainder.
3. **The decisions agree with the totals**: credited deposits sum to ``received``;
   refunds of credited ``tokenIn`` sum to ``refunded``; the repayment is the total less
   the fees (or the total, without a fee account); the fee sweep is the fees, or the fees
   are retained below ``min_sweep``; the excess kept is below ``min_sweep``; each late or
   wrong-token deposit has exactly one refund of its amount, each retained one none.
4. **Each action agrees with its transactions** (``reports.transfer_checks``; the
   address's ledger, checks 2 and 4 and the deposits' refunds, is
   :mod:`intentd.reports.address_ledger`): a
   confirmed action has exactly one confirmed transfer, whose bytes send the action's
   token and amount to its address from the right signer, whose hash the action names,
   and whose receipt's gas is the action's ``gas_cost`` (``amount_sent`` is what it
   moved); an action not confirmed has no confirmed transfer.

Every disagreement is a :class:`~intentd.reports.books.Mismatch`; none is expected. What
it cannot see: a figure recorded wrongly in the same way in every record (a deposit the
indexer recorded with a wrong amount that nothing else mentions: a retained one); that
needs the chain (the chaos run's balance checks, bench/chaos/check.py).
"""

from __future__ import annotations

from intentd.reports.address_ledger import FROM_ADDRESS, AddressLedger
from intentd.reports.books import Check, IntentBooks, Reconciled

__all__ = ["CREDIT_REASONS", "ENDED", "reconcile"]

ENDED = ("COMPLETED", "REFUNDED", "EXPIRED", "CANCELLED")
CREDIT_REASONS = frozenset({"excess", "expired", "failed", "cancelled", "merchant"})
"""Refunds of credited ``tokenIn`` (counted in the intent's ``refunded``)."""
ENDING_REASONS = frozenset({"expired", "failed", "cancelled", "merchant"})


def reconcile(books: IntentBooks) -> Reconciled:
    """Every check of the module docstring on one intent's books."""
    return _Reconciliation(books).run()


class _Reconciliation(AddressLedger):
    """Every check of the module docstring; the address's ledger is the base's."""

    __slots__ = ()

    def run(self) -> Reconciled:
        self._deposits()
        for action in self.books.actions:
            if action.kind in FROM_ADDRESS:
                self._spend(action)
        recipient_got = self._recipient()
        fee_retained = self._repayment_and_fees()
        self._credit(fee_retained)
        for line in self.lines.values():
            if not line.balanced:
                self._flag(
                    Check.ADDRESS_BALANCE,
                    (line.chain, line.token),
                    line.received,
                    line.accounted,
                    f"received {line.received}; repaid {line.relayer_repaid} + fees"
                    f" {line.fees_swept} + refunded {line.refunded} + gas from amount"
                    f" {line.gas_from_amount} + retained {line.retained} + held {line.held}",
                )
        ordered = tuple(self.lines[key] for key in sorted(self.lines))
        return Reconciled(self.terms, recipient_got, ordered, tuple(self.found))

    # --- the recipient, the relayer, the fees ---------------------------------------
    def _recipient(self) -> int:
        terms = self.terms
        prefills = [a for a in self.books.actions if a.kind == "prefill"]
        got = 0
        for action in prefills:
            for transfer in self._winners(action, signer=terms.relayer):
                if (transfer.token, transfer.recipient) == (terms.token_out, terms.recipient):
                    got += transfer.amount
        completed = terms.status == "COMPLETED"
        due = terms.amount_out if completed else 0
        if got != due:
            self._flag(
                Check.RECIPIENT,
                (terms.destination_chain, terms.token_out),
                due,
                got,
                f"the recipient got {got} of {terms.amount_out} due ({terms.status})",
            )
        live = [a for a in prefills if a.status != "cancelled"]
        if completed and not (
            len(live) == 1
            and live[0].status == "confirmed"
            and (live[0].chain, live[0].token, live[0].amount, live[0].to_address)
            == (terms.destination_chain, terms.token_out, terms.amount_out, terms.recipient)
        ):
            self._flag(
                Check.PREFILL,
                (terms.destination_chain, terms.token_out),
                terms.amount_out,
                sum(a.amount for a in live),
                f"a completed intent needs one confirmed prefill of {terms.amount_out} to the"
                f" recipient; found {[(a.id, a.status, a.amount) for a in live]}",
            )
        return got

    def _repayment_and_fees(self) -> int:
        """Check the repayment and the fee sweep; the fees retained at the address."""
        terms = self.terms
        repays = [a for a in self.live if a.kind == "relayer_refund"]
        sweeps = [a for a in self.live if a.kind == "fee_sweep"]
        repaid, swept = sum(a.amount for a in repays), sum(a.amount for a in sweeps)
        if terms.status != "COMPLETED":
            for check, found in ((Check.RELAYER_REPAYMENT, repaid), (Check.FEE_SWEEP, swept)):
                if found:
                    self._flag(
                        check,
                        (terms.source_chain, terms.token_in),
                        0,
                        found,
                        f"a {terms.status} intent repays or sweeps nothing",
                    )
            return 0
        owed = terms.total_due - terms.fees
        if not (
            len(repays) == 1
            and repaid in (terms.total_due, owed)
            and (repays[0].chain, repays[0].token, repays[0].to_address)
            == (terms.source_chain, terms.token_in, terms.relayer)
        ):
            self._flag(
                Check.RELAYER_REPAYMENT,
                (terms.source_chain, terms.token_in),
                owed,
                repaid,
                f"the relayer {terms.relayer} is repaid the total {terms.total_due} less the"
                f" fees {terms.fees} (or the total, without a fee account) in one action",
            )
        fees = terms.total_due - repaid
        small = terms.min_sweep is None or fees < terms.min_sweep
        if swept != fees and not (swept == 0 and fees == terms.fees and small):
            self._flag(
                Check.FEE_SWEEP,
                (terms.source_chain, terms.token_in),
                fees,
                swept,
                f"fees of {fees} are swept whole, or retained when below min_sweep"
                f" {terms.min_sweep}",
            )
        return fees - swept

    def _credit(self, fee_retained: int) -> None:
        """The credited ``tokenIn`` left at the address, from the intent's own totals."""
        terms = self.terms
        credit_refunds = [
            a for a in self.live if a.kind == "user_refund" and a.reason in CREDIT_REASONS
        ]
        refunded = sum(a.amount for a in credit_refunds)
        if refunded != terms.refunded:
            self._flag(
                Check.CREDIT_REFUNDS,
                (terms.source_chain, terms.token_in),
                terms.refunded,
                refunded,
                "the refunds of credited tokenIn do not sum to the intent's refunded",
            )
        held = terms.received - terms.refunded
        limit = terms.min_sweep
        if terms.status == "COMPLETED":
            kept = held - terms.total_due
            ok = kept >= 0 and (limit is None or kept < max(limit, 1))
            what = f"an excess of {kept} kept at completion (refunded when >= min_sweep {limit})"
            retained = kept + fee_retained
        elif terms.status == "REFUNDED":
            kept = retained = held
            ok = held == 0
            what = f"a refunded intent still holds {held} of its credit"
            if not any(
                a.reason in ENDING_REASONS and a.status == "confirmed" for a in credit_refunds
            ):
                self._flag(
                    Check.STATUS,
                    (terms.source_chain, terms.token_in),
                    None,
                    None,
                    "REFUNDED without a confirmed expired, failed, cancelled or merchant refund",
                )
        else:
            kept = retained = held
            ok = held >= 0 and (held == 0 or limit is None or held < limit)
            what = f"{held} kept at {terms.status} (refunded when >= min_sweep {limit})"
        if not ok:
            self._flag(Check.RETAINED, (terms.source_chain, terms.token_in), None, kept, what)
        self._line(terms.source_chain, terms.token_in).retained += retained
