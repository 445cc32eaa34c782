"""Deposits as the domain knows them: a transfer's identity, the transfer, its record.

One value type per concept, used wherever a deposit's identity is compared or stored:

- :class:`DepositKey`: who a transfer is, the same on every fork
  ``(chain, tx_hash, token, transfer_index)``;
- :class:`Deposit`: a confirmed transfer to an intent address, with where it was seen
  (block, log) and its identity;
- :class:`Retraction`: a reorg removed the block a deposit was published from; it
  names that block and log (the record retracted), and the identity when known;
- :class:`RecordedDeposit`: a deposit as the store holds it, with what was decided
  about it (:class:`Disposition`).

The wire forms (``messages.DepositMessage``, ``messages.RetractionMessage``) are
converted to and from these in :mod:`intentd.wire`; the rows in
:mod:`intentd.adapters.postgres.deposit_rows`. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from intentd.domain.intent import RefundReason
    from intentd.domain.valuation import Rate

__all__ = ["Deposit", "DepositKey", "Disposition", "RecordedDeposit", "Retraction"]


class Disposition(StrEnum):
    CREDITED = "credited"
    """Counted towards the intent's total."""
    REFUND_OWED = "refund_owed"
    """Not counted; the amount goes back to ``refund_address``."""
    IGNORED = "ignored"
    """A token the chain does not list; recorded, nothing else."""
    UNMATCHED = "unmatched"
    """No intent has this address (recorded so nothing is lost)."""
    INTERNAL = "internal"
    """A transaction of ours (a gas top-up from the gas tank): not the user's money."""
    RETRACTED = "retracted"
    """Its block left the canonical chain after it was recorded."""
    RETAINED = "retained"
    """A refund would be owed, but the amount is below the token's ``min_sweep``: it
    stays at the intent address (refunding it would cost more than it is worth)."""


@dataclass(frozen=True, slots=True)
class DepositKey:
    """A transfer's identity, the same on every fork.

    ``transfer_index`` is the transfer's position among its transaction's ``Transfer``
    logs of ``token`` (-1 for the native coin); None only for a deposit published or
    recorded before identities existed (it is then matched by content).
    """

    chain: str
    tx_hash: str
    token: str
    transfer_index: int | None

    def __str__(self) -> str:
        """``<CHAIN>:<tx>:<token>:<index>``, the id of its messages (``messages.deposit_id``)."""
        return f"{self.chain}:{self.tx_hash}:{self.token}:{self.transfer_index}"


@dataclass(frozen=True, slots=True)
class Deposit:
    """A confirmed transfer to an intent address (addresses lowercase)."""

    chain: str
    tx_hash: str
    log_index: int
    """The log's index in its block (-1 native): where it was seen on this fork."""
    block_number: int
    block_hash: str
    block_time: datetime
    token: str
    from_address: str
    to_address: str
    amount: int
    transfer_index: int | None = None
    """See :class:`DepositKey`."""

    @property
    def key(self) -> DepositKey:
        return DepositKey(self.chain, self.tx_hash, self.token, self.transfer_index)


@dataclass(frozen=True, slots=True)
class Retraction:
    """A published deposit whose block a reorg removed: the record recorded from log
    ``log_index`` of block ``block_hash`` is the one retracted."""

    chain: str
    tx_hash: str
    log_index: int
    block_number: int
    block_hash: str
    to_address: str
    token: str | None = None
    transfer_index: int | None = None
    """The deposit's identity, when the publisher knew it."""

    @property
    def label(self) -> str:
        """How logs name it: its identity, or where it was seen for an old message."""
        if self.token is None or self.transfer_index is None:
            return f"{self.chain}:{self.tx_hash}:{self.log_index}"
        return f"{self.chain}:{self.tx_hash}:{self.token}:{self.transfer_index}"


@dataclass(frozen=True, slots=True)
class RecordedDeposit:
    """A deposit as recorded, with what was decided about it."""

    id: int
    deposit: Deposit
    intent_id: int | None
    disposition: Disposition
    reason: RefundReason | None
    orphaned: bool = False
    """A retraction of it could not be undone; the intent's spending actions are held."""
    rate: Rate | None = None
    """The prices its credit was valued at (a revalued intent's deposit), kept so that
    crediting it again (a reorg brought it back) decides the same."""

    @property
    def key(self) -> DepositKey:
        return self.deposit.key
