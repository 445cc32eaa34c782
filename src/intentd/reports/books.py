"""The records the reconciliation reads, and what it answers: one intent's books.

Pure values, no I/O. Addresses and tokens are lowercase; amounts are integers in base
units. The adapter (``adapters.postgres.report_queries``) fills :class:`IntentBooks` from the
intent row, its deposits, its actions and every chain transaction of those actions;
:func:`intentd.reports.reconciliation.reconcile` answers :class:`Reconciled`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from intentd.reports.signed_transfers import SignedTx

__all__ = [
    "ActionRecord",
    "Check",
    "DepositRecord",
    "IntentBooks",
    "IntentTerms",
    "LedgerLine",
    "Mismatch",
    "Reconciled",
    "TxRecord",
]


class Check(StrEnum):
    """What a mismatch is about (the ``check`` of a listed mismatch)."""

    CREDITED_TOTAL = "credited_total"
    """The credited deposits do not sum to the intent's ``received``."""
    CREDIT_REFUNDS = "credit_refunds"
    """The refunds of credited ``tokenIn`` do not sum to the intent's ``refunded``."""
    RECIPIENT = "recipient"
    """The recipient did not get exactly ``amount_out`` (or got something from an intent
    that did not complete)."""
    PREFILL = "prefill"
    """A completed intent has not exactly one confirmed prefill of its terms."""
    RELAYER_REPAYMENT = "relayer_repayment"
    """The relayer's repayment is not the total less the fees (or the total)."""
    FEE_SWEEP = "fee_sweep"
    """The fee sweep is not the fees, nor are the fees retained as dust."""
    RETAINED = "retained"
    """What stays at the address of the credited ``tokenIn`` breaks the dust rules."""
    DEPOSIT_REFUND = "deposit_refund"
    """A late or wrong-token deposit has not exactly one refund of its amount."""
    TRANSACTION = "transaction"
    """An action and its recorded transactions disagree (none or two confirmed, another
    recipient or amount, ``amount_sent`` or ``gas_cost`` not the receipt's)."""
    ADDRESS_BALANCE = "address_balance"
    """What the address received is not what left it + retained + still held."""
    STATUS = "status"
    """The intent's status and its confirmed actions disagree."""


@dataclass(frozen=True, slots=True)
class IntentTerms:
    """The intent row: its terms and the totals it keeps."""

    id: int
    address: str
    status: str
    source_chain: str
    destination_chain: str
    token_in: str
    token_out: str
    total_due: int
    fees: int
    """Route fee and application fee, base units of ``tokenIn``."""
    amount_out: int
    received: int
    refunded: int
    recipient: str
    refund_address: str
    relayer: str
    min_sweep: int | None
    """``tokenIn``'s ``min_sweep`` on the source chain today (None: not configured)."""


@dataclass(frozen=True, slots=True)
class DepositRecord:
    id: int
    chain: str
    token: str
    amount: int
    disposition: str
    reason: str | None


@dataclass(frozen=True, slots=True)
class ActionRecord:
    id: int
    kind: str
    chain: str
    token: str
    amount: int
    to_address: str
    reason: str | None
    deposit_id: int | None
    status: str
    gas_from_amount: bool
    amount_sent: int | None
    gas_cost: int | None
    tx_hash: str | None


@dataclass(frozen=True, slots=True)
class TxRecord:
    """A transaction of ours, with its receipt's figures once final."""

    action_id: int
    purpose: str
    status: str
    signer: str
    tx_hash: str
    signed: SignedTx | None
    """What its recorded bytes say (None: they do not decode)."""
    gas_used: int | None
    effective_gas_price: int | None
    l1_fee: int | None

    @property
    def gas(self) -> int:
        """What it burned: gas used x price + L1 data fee (0 before its receipt)."""
        return (self.gas_used or 0) * (self.effective_gas_price or 0) + (self.l1_fee or 0)


@dataclass(frozen=True, slots=True)
class IntentBooks:
    terms: IntentTerms
    deposits: tuple[DepositRecord, ...]
    actions: tuple[ActionRecord, ...]
    transactions: tuple[TxRecord, ...]


@dataclass(slots=True)
class LedgerLine:
    """One token on one chain at the intent address:
    ``received = relayer_repaid + fees_swept + refunded + gas_from_amount + retained + held``.

    ``received``: deposits of the user's money (credited, refund owed, retained). The
    three outflows are what the confirmed transactions moved (their recorded bytes);
    ``gas_from_amount``: gas a native sweep paid out of the amount it swept;
    ``retained``: dust left at the address by the rules (a deposit below ``min_sweep``,
    an excess or fees too small to move, what an expired or cancelled intent held, the
    unspent gas reserve of a native sweep); ``held``: decided but not yet confirmed
    transfers (ready, held, submitted, or failed and waiting for an operator)."""

    chain: str
    token: str
    received: int = 0
    relayer_repaid: int = 0
    fees_swept: int = 0
    refunded: int = 0
    gas_from_amount: int = 0
    retained: int = 0
    held: int = 0

    @property
    def accounted(self) -> int:
        return (
            self.relayer_repaid
            + self.fees_swept
            + self.refunded
            + self.gas_from_amount
            + self.retained
            + self.held
        )

    @property
    def balanced(self) -> bool:
        return self.received == self.accounted


@dataclass(frozen=True, slots=True)
class Mismatch:
    intent_id: int
    intent_address: str
    check: Check
    chain: str
    token: str
    expected: int | None
    found: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class Reconciled:
    terms: IntentTerms
    recipient_got: int
    """Base units of ``tokenOut`` the recipient received (confirmed prefills)."""
    lines: tuple[LedgerLine, ...]
    mismatches: tuple[Mismatch, ...]
