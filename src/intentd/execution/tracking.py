"""What to do with the transactions of one nonce: pure decisions, no I/O.

All transactions an action's signer signed with one nonce form a *group*: the
first one and its same-nonce replacements. At most one of them can be mined, and
every one may be until one is. Each tick the executor reads the receipts of every
hash of every open group (and the signer's mined nonce count), and
:func:`judge_group` says what follows:

- :class:`Final`: one of them is mined at the chain's confirmation depth; the
  others are dropped; it either succeeded or reverted.
- :class:`Included`: one is mined, not yet deep enough: wait (a reorg may undo it).
- :class:`Consumed`: none of ours is mined yet the signer's nonce moved past it at
  confirmation depth: something else used the nonce; every hash of the group is dropped.
- :class:`Pending`: nothing mined. Broadcast what was signed and never sent
  (a crash between record and send), and say whether the newest transaction has
  waited longer than ``stuck_after`` (then it is re-broadcast if the node forgot it,
  else replaced with higher fees).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from intentd.execution.gas import Fees
from intentd.execution.planning import Purpose

__all__ = [
    "OPEN_STATUSES",
    "Consumed",
    "Final",
    "Included",
    "Pending",
    "Receipt",
    "Tx",
    "TxStatus",
    "Verdict",
    "at_depth",
    "depth_block",
    "judge_group",
    "newly_included",
    "next_transfer_due",
    "nonce_groups",
]


class TxStatus(enum.StrEnum):
    SIGNED = "signed"
    """Recorded with its nonce and raw bytes; maybe not broadcast yet."""
    SENT = "sent"
    """Accepted by a node at least once."""
    MINED = "mined"
    """In a block, not yet at confirmation depth."""
    CONFIRMED = "confirmed"
    """Mined with status 1 at confirmation depth (final)."""
    REVERTED = "reverted"
    """Mined with status 0 at confirmation depth (final; the nonce is consumed)."""
    REPLACED = "replaced"
    """A same-nonce successor was recorded; this one may still be mined."""
    DROPPED = "dropped"
    """Its nonce was consumed by another transaction (final)."""


OPEN_STATUSES = frozenset({TxStatus.SIGNED, TxStatus.SENT, TxStatus.MINED, TxStatus.REPLACED})


@dataclass(frozen=True, slots=True)
class Tx:
    """A recorded transaction (a row of ``chain_transactions``)."""

    id: int
    action_id: int
    purpose: Purpose
    signer: str
    nonce: int
    tx_hash: str
    raw: bytes
    to: str
    value: int
    gas_limit: int
    fees: Fees
    status: TxStatus
    block_number: int | None
    age: float
    """Seconds since the row last changed (recorded, sent, re-broadcast)."""


@dataclass(frozen=True, slots=True)
class Receipt:
    tx_hash: str
    block_number: int
    block_hash: str
    succeeded: bool
    gas_used: int
    effective_gas_price: int
    l1_fee: int = 0
    """The OP-stack L1 data fee the sender paid on top of gas (receipt ``l1Fee``); 0
    on chains that charge none."""


@dataclass(frozen=True, slots=True)
class Final:
    winner: Tx
    receipt: Receipt
    losers: tuple[Tx, ...]


@dataclass(frozen=True, slots=True)
class Included:
    winner: Tx
    receipt: Receipt


@dataclass(frozen=True, slots=True)
class Consumed:
    txs: tuple[Tx, ...]


@dataclass(frozen=True, slots=True)
class Pending:
    unsent: tuple[Tx, ...]
    """Signed, never sent: broadcast them (oldest first)."""
    unmined: tuple[Tx, ...]
    """Recorded as mined, but no longer in a block (a reorg): back to ``sent``."""
    stale: Tx | None
    """The newest transaction, if it waited longer than ``stuck_after``."""
    newest: Tx


Verdict = Final | Included | Consumed | Pending


def at_depth(block_number: int, head: int, confirmations: int) -> bool:
    """A block is confirmed once it has ``confirmations`` blocks on top, itself included."""
    return head - block_number + 1 >= confirmations


def depth_block(head: int, confirmations: int) -> int:
    """The newest block at confirmation depth (0 while the chain is shorter)."""
    return max(head - confirmations + 1, 0)


def nonce_groups(txs: Sequence[Tx]) -> list[list[Tx]]:
    """The open transactions of ``txs`` (oldest first) by (signer, nonce), each group
    oldest first, groups in the order of their first transaction."""
    groups: dict[tuple[str, int], list[Tx]] = {}
    for tx in txs:
        if tx.status in OPEN_STATUSES:
            groups.setdefault((tx.signer, tx.nonce), []).append(tx)
    return list(groups.values())


def newly_included(winner: Tx, receipt: Receipt) -> bool:
    """Whether an included transaction must be recorded ``mined`` in the receipt's block
    (it was not, or it was in another block: a reorg moved it)."""
    return winner.status is not TxStatus.MINED or winner.block_number != receipt.block_number


def judge_group(
    txs: Sequence[Tx],
    receipts: Mapping[str, Receipt | None],
    *,
    head: int,
    confirmations: int,
    mined_nonces: int | None,
    stuck_after: float,
) -> Verdict:
    """The verdict on one nonce group (``txs`` ordered oldest first, same signer and nonce).

    ``mined_nonces`` is the signer's transaction count at the newest block at
    confirmation depth (a shallower transaction that used the nonce may yet be reorged
    out for one of ours), read *before* the receipts (so a transaction mined in between
    is seen as mined, never as consumed); None if unknown.
    """
    if not txs:
        raise ValueError("a nonce group has at least one transaction")
    nonce, signer = txs[0].nonce, txs[0].signer
    if any(tx.nonce != nonce or tx.signer != signer for tx in txs):
        raise ValueError("a nonce group has one signer and one nonce")
    mined = [(tx, r) for tx in txs if (r := receipts.get(tx.tx_hash)) is not None]
    if mined:
        winner, receipt = mined[0]  # one nonce, one chain: at most one can be included
        if at_depth(receipt.block_number, head, confirmations):
            return Final(winner, receipt, tuple(tx for tx in txs if tx is not winner))
        return Included(winner, receipt)
    if mined_nonces is not None and mined_nonces > nonce:
        return Consumed(tuple(txs))
    newest = txs[-1]
    stale = newest if newest.status is TxStatus.SENT and newest.age >= stuck_after else None
    return Pending(
        unsent=tuple(tx for tx in txs if tx.status is TxStatus.SIGNED),
        unmined=tuple(tx for tx in txs if tx.status is TxStatus.MINED),
        stale=stale,
        newest=newest,
    )


def next_transfer_due(history: Sequence[Tx]) -> bool:
    """Whether the transfer must be signed now: the action's newest transaction is a
    confirmed gas top-up (``history`` oldest first; dropped siblings of a mined
    transaction do not count)."""
    live = [tx for tx in history if tx.status is not TxStatus.DROPPED]
    if not live:
        return False
    last = live[-1]
    return last.purpose is Purpose.GAS_TOPUP and last.status is TxStatus.CONFIRMED
