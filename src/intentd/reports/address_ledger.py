"""An intent address's ledger: what reached it and what left it, per chain and token.

Pure: integers in base units, no I/O, no floats. :class:`AddressLedger` books, from an
intent's books (:class:`~intentd.reports.books.IntentBooks`), the deposits of the
user's money (:data:`USER_MONEY`) as received and each action from the address
(:data:`FROM_ADDRESS`) by what its confirmed transactions' bytes moved
(``reports.transfer_checks``), with the gas a native sweep paid from its amount and
what is still held (:data:`STILL_HELD`). On the way it checks that each late or
wrong-token deposit has exactly one refund of its amount (a retained one none), that
the credited deposits sum to ``received``, and that each action agrees with its
transactions; every disagreement is recorded as a
:class:`~intentd.reports.books.Mismatch`. :mod:`intentd.reports.reconciliation` adds the
checks of the intent's totals and says whether each line balances.
"""

from __future__ import annotations

from collections import defaultdict

from intentd.reports.books import (
    ActionRecord,
    Check,
    IntentBooks,
    LedgerLine,
    Mismatch,
    TxRecord,
)
from intentd.reports.signed_transfers import Transfer
from intentd.reports.transfer_checks import check_transfers

__all__ = ["FROM_ADDRESS", "STILL_HELD", "USER_MONEY", "AddressLedger"]

USER_MONEY = frozenset({"credited", "refund_owed", "retained"})
"""Deposit dispositions that are the user's money at the address (not ``ignored``: a
token the chain does not list; not ``internal``: our own gas top-up; not ``retracted``,
``unmatched``)."""
STILL_HELD = frozenset({"ready", "held", "submitted", "failed"})
"""Action statuses whose amount is still at the address."""
FROM_ADDRESS = frozenset({"relayer_refund", "fee_sweep", "user_refund"})
_BUCKET = {"relayer_refund": "relayer_repaid", "fee_sweep": "fees_swept"}


class AddressLedger:
    """The ledger lines of one intent's address, and the mismatches found so far."""

    __slots__ = ("books", "found", "lines", "live", "terms", "txs")

    def __init__(self, books: IntentBooks) -> None:
        self.books = books
        self.terms = books.terms
        self.lines: dict[tuple[str, str], LedgerLine] = {}
        self.found: list[Mismatch] = []
        self.txs: dict[int, list[TxRecord]] = defaultdict(list)
        for tx in books.transactions:
            self.txs[tx.action_id].append(tx)
        self.live = [a for a in books.actions if a.status != "cancelled"]

    # --- what the address received --------------------------------------------------
    def _deposits(self) -> None:
        terms = self.terms
        credited = 0
        refunds_of: dict[int, list[ActionRecord]] = defaultdict(list)
        for action in self.live:
            if action.deposit_id is not None:
                refunds_of[action.deposit_id].append(action)
        mine = set()
        for deposit in self.books.deposits:
            if deposit.disposition not in USER_MONEY:
                continue
            mine.add(deposit.id)
            line = self._line(deposit.chain, deposit.token)
            line.received += deposit.amount
            refunds = refunds_of.get(deposit.id, [])
            if deposit.disposition == "credited":
                credited += deposit.amount
            elif deposit.disposition == "retained":
                line.retained += deposit.amount
                if refunds:
                    self._flag(
                        Check.DEPOSIT_REFUND,
                        (deposit.chain, deposit.token),
                        0,
                        sum(a.amount for a in refunds),
                        f"deposit {deposit.id} was retained as dust but has a refund",
                    )
            elif not (
                len(refunds) == 1
                and (refunds[0].kind, refunds[0].chain, refunds[0].token, refunds[0].amount)
                == ("user_refund", deposit.chain, deposit.token, deposit.amount)
                and refunds[0].reason == deposit.reason
                and refunds[0].to_address == terms.refund_address
            ):
                self._flag(
                    Check.DEPOSIT_REFUND,
                    (deposit.chain, deposit.token),
                    deposit.amount,
                    sum(a.amount for a in refunds),
                    f"deposit {deposit.id} ({deposit.reason}) owes one refund of its amount"
                    f" to the refund address; actions {[a.id for a in refunds]}",
                )
        for deposit_id, refunds in refunds_of.items():
            if deposit_id not in mine:
                self._flag(
                    Check.DEPOSIT_REFUND,
                    (refunds[0].chain, refunds[0].token),
                    0,
                    sum(a.amount for a in refunds),
                    f"actions {[a.id for a in refunds]} refund deposit {deposit_id}, which"
                    " is not a deposit of this intent owing one",
                )
        if credited != terms.received:
            self._flag(
                Check.CREDITED_TOTAL,
                (terms.source_chain, terms.token_in),
                terms.received,
                credited,
                "the credited deposits do not sum to the intent's received",
            )

    # --- what left it -----------------------------------------------------------------
    def _spend(self, action: ActionRecord) -> None:
        """Book a transfer from the intent address, checking it against its transactions."""
        winners = self._winners(action, signer=self.terms.address)
        line = self._line(action.chain, action.token)
        burned = 0
        if action.gas_from_amount:
            burned = sum(
                t.gas
                for t in self.txs[action.id]
                if t.purpose == "transfer" and t.status in ("confirmed", "reverted")
            )
            line.gas_from_amount += burned
        moved_here = 0
        for transfer in winners:
            bucket = _BUCKET.get(action.kind, "refunded")
            target = self._line(action.chain, transfer.token)
            setattr(target, bucket, getattr(target, bucket) + transfer.amount)
            if transfer.token == action.token:
                moved_here += transfer.amount
        if action.status == "confirmed" and action.gas_from_amount:
            left = action.amount - moved_here - burned
            line.retained += left  # the unspent gas reserve stays at the address
            if left < 0:
                self._flag(
                    Check.TRANSACTION,
                    (action.chain, action.token),
                    action.amount,
                    moved_here + burned,
                    f"native sweep {action.id} moved and burned more than its amount",
                )
        elif action.status in STILL_HELD and not winners:
            line.held += action.amount - burned

    def _winners(self, action: ActionRecord, *, signer: str) -> list[Transfer]:
        """What the action's confirmed transfers moved; mismatches for any disagreement."""
        checked = check_transfers(action, self.txs[action.id], signer=signer)
        if checked.count != checked.expected:
            self._flag(
                Check.TRANSACTION,
                (action.chain, action.token),
                checked.expected,
                checked.count,
                f"action {action.id} ({action.kind}) is {action.status} with"
                f" {checked.count} confirmed transfers",
            )
        for tx_hash, detail in checked.problems:
            self._flag(
                Check.TRANSACTION,
                (action.chain, action.token),
                None,
                None,
                f"action {action.id} ({action.kind}), transaction {tx_hash}: {detail}",
            )
        return checked.moved

    # --- helpers ------------------------------------------------------------------------
    def _line(self, chain: str, token: str) -> LedgerLine:
        key = (chain, token)
        if key not in self.lines:
            self.lines[key] = LedgerLine(chain, token)
        return self.lines[key]

    def _flag(
        self,
        check: Check,
        where: tuple[str, str],
        expected: int | None,
        found: int | None,
        detail: str,
    ) -> None:
        """Record a mismatch about ``where`` (chain, token)."""
        terms = self.terms
        self.found.append(Mismatch(terms.id, terms.address, check, *where, expected, found, detail))
