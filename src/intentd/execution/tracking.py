"""What to do with the transactions of one nonce: pure decisions, no I/O.

All transactions an action's signer signed with one nonce form a *group*: the
first one and its same-nonce replacements. At most one of them can be mined, and
every one may be until one is. Each tick the executor reads, from one node in one
request (``execution.evidence``), the receipts of every hash of every open group and
the signer's transaction count at the newest block at confirmation depth, and
:func:`judge_group` says what follows:

- :class:`Final`: one of them is mined at the chain's confirmation depth; the
  others are dropped; it either succeeded or reverted.
- :class:`Included`: one is mined, not yet deep enough: wait (a reorg may undo it).
- :class:`Unexplained`: none of ours has a receipt, yet the signer's count passed the
  nonce at confirmation depth. An absent receipt proves nothing (a node whose receipt
  index lags, a backend behind the others): the transaction that used the nonce must be
  found in a block (:class:`NonceUse`), and :func:`judge_use` decides on that proof:
  ours (then final, once its receipt is read) or another one (:class:`Consumed`, every
  hash of the group dropped, its hash the evidence). Without proof: no verdict, the
  group waits; nothing is signed again, replaced or re-broadcast.
- :class:`Pending`: nothing mined. Broadcast what was signed and never sent
  (a crash between record and send), and say whether the newest transaction has
  waited longer than ``stuck_after`` (then it is re-broadcast if the node forgot it,
  else replaced with higher fees: the same nonce, so at most one is ever mined).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from intentd.execution.gas import Fees
from intentd.execution.tx_plans import Purpose

__all__ = [
    "OPEN_STATUSES",
    "Consumed",
    "Final",
    "Included",
    "NonceUse",
    "Pending",
    "Receipt",
    "Tx",
    "TxStatus",
    "Unexplained",
    "Verdict",
    "at_depth",
    "depth_block",
    "judge_group",
    "judge_use",
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
class NonceUse:
    """The transaction that used a signer's nonce, found in a block (the proof)."""

    block_number: int
    block_hash: str
    tx_hash: str
    receipt: Receipt | None
    """Its receipt, read with the block from the same node, when that node has it."""


@dataclass(frozen=True, slots=True)
class Consumed:
    """Another transaction used the nonce, at confirmation depth: ``use`` is the proof."""

    txs: tuple[Tx, ...]
    use: NonceUse


@dataclass(frozen=True, slots=True)
class Unexplained:
    """No verdict this tick: the nonce is used at depth and no receipt of ours was read,
    and nothing yet proves who used it (``reason``). The group waits as it is."""

    txs: tuple[Tx, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class Pending:
    unsent: tuple[Tx, ...]
    """Signed, never sent: broadcast them (oldest first)."""
    unmined: tuple[Tx, ...]
    """Recorded as mined, but no longer in a block (a reorg): back to ``sent``."""
    stale: Tx | None
    """The newest transaction, if it waited longer than ``stuck_after``."""
    newest: Tx


Verdict = Final | Included | Consumed | Unexplained | Pending


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

    ``receipts`` and ``head`` come from one node's answer (``execution.evidence``);
    ``mined_nonces`` is the signer's transaction count at the newest block at
    confirmation depth (a shallower transaction that used the nonce may yet be reorged
    out for one of ours) from the same answer; None if unknown. A count past the nonce
    with no receipt is :class:`Unexplained`, never :class:`Consumed`: the proof is
    :func:`judge_use`'s.
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
        return Unexplained(tuple(txs), f"nonce {nonce} used at depth; no receipt of ours read")
    newest = txs[-1]
    stale = newest if newest.status is TxStatus.SENT and newest.age >= stuck_after else None
    return Pending(
        unsent=tuple(tx for tx in txs if tx.status is TxStatus.SIGNED),
        # recorded mined in a block this node has, and no receipt there now: a reorg
        # (a node that has not reached that block yet proves nothing)
        unmined=tuple(
            tx
            for tx in txs
            if tx.status is TxStatus.MINED and (tx.block_number is None or tx.block_number <= head)
        ),
        stale=stale,
        newest=newest,
    )


def judge_use(
    txs: Sequence[Tx], use: NonceUse | None, *, head: int, confirmations: int
) -> Final | Consumed | Unexplained:
    """The verdict on an :class:`Unexplained` group once the transaction that used its
    nonce was looked for (``use``; None: not found, or the answers disagreed).

    Ours found: :class:`Final` with its receipt (read from the node that showed the
    block), or still :class:`Unexplained` while no receipt of it can be read. Another
    one found at depth: :class:`Consumed`. Anything else proves nothing.
    """
    group = tuple(txs)
    if use is None:
        return Unexplained(group, "no transaction found in a block on the nonce")
    if not at_depth(use.block_number, head, confirmations):
        return Unexplained(group, f"the nonce was used in block {use.block_number}, above depth")
    for winner in group:
        if winner.tx_hash == use.tx_hash:
            if use.receipt is None or use.receipt.tx_hash != winner.tx_hash:
                return Unexplained(
                    group, f"ours ({winner.tx_hash}) is in block {use.block_number}; no receipt yet"
                )
            return Final(winner, use.receipt, tuple(tx for tx in group if tx is not winner))
    return Consumed(group, use)


def next_transfer_due(history: Sequence[Tx]) -> bool:
    """Whether the transfer must be signed now: the action's newest transaction is a
    confirmed gas top-up (``history`` oldest first; dropped siblings of a mined
    transaction do not count)."""
    live = [tx for tx in history if tx.status is not TxStatus.DROPPED]
    if not live:
        return False
    last = live[-1]
    return last.purpose is Purpose.GAS_TOPUP and last.status is TxStatus.CONFIRMED
