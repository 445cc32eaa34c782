"""Balance reconciliation of native-coin intent addresses (pure): ETH that arrived through
a contract.

A contract (a smart-contract wallet, an ERC-4337 account, a Safe, a payment router)
pays an intent address by an internal call: no transaction has the address as its
``to``, so :func:`intentd.chain.evm.decoding.native_deposits` does not see it. An intent
address is an externally owned account without code, so its balance changes only by

- top-level transactions to it (the value, if the transaction succeeded),
- transactions it sends (the value if it succeeded, and always the fee),
- value that arrives by internal calls (or a ``SELFDESTRUCT``, a withdrawal, a chain's
  system credit): money that really arrived.

So over any block, ``balance after - balance before - what the block's top-level
transactions explain`` (:func:`unexplained`) is the value that arrived by other means.
This module computes that remainder per block and makes each positive one a
*reconciled deposit*:

- it never counts a top-level payment twice: those are explained, so subtracted;
- fee components a receipt does not show are not subtracted, which can only make a
  remainder smaller (an under-credit, never an over-credit): the fee of a transaction
  is ``gasUsed * effectiveGasPrice`` plus the OP-stack ``l1Fee`` and the blob fee when
  the receipt has them;
- here it is identified by its block: the synthetic transaction hash
  :func:`reconciled_tx_hash` of (address, block hash), ``log_index`` -1. The same block
  always gives the same deposit with the same amount, whatever batch it was read in.
  :mod:`intentd.chain.evm.reconciled_ids` then identifies it by the transaction(s) that
  caused it, so that a reorg that mines them again elsewhere keeps its identity.

The same arithmetic (:func:`explained`, :func:`unexplained`) is what the executor's
second provider recomputes before a prefill (``execution.deposit_verifier``).

Only the addresses of intents whose ``tokenIn`` is the native coin of the chain are
reconciled, and only in blocks inside :class:`Reconciled` windows (from a little before
the intent was created to a while after it expired).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from intentd.chain.blocks import BlockHeader
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.decoding import NATIVE
from intentd.chain.transfers import ChainTransfer
from intentd.messages import NATIVE_LOG_INDEX

__all__ = [
    "AFTER_EXPIRY",
    "AFTER_TRANSACTIONS",
    "BEFORE_CREATION",
    "UNKNOWN_SENDER",
    "Movement",
    "Reconciled",
    "explained",
    "explained_change",
    "fee",
    "is_reconciled",
    "movements",
    "reconciled_deposits",
    "reconciled_tx_hash",
    "unexplained",
]

BEFORE_CREATION = 300
"""Seconds before an intent's creation its address is reconciled from (clock skew)."""
AFTER_EXPIRY = 3600
"""Seconds after an intent's expiry its address is still reconciled (late payments)."""
UNKNOWN_SENDER = "0x" + "0" * 40
"""``from_address`` of an reconciled deposit: a balance shows no sender."""
AFTER_TRANSACTIONS = 2**31 - 1
"""Sort position of an reconciled deposit: after the block's transactions."""
_DOMAIN = b"intentd reconciled deposit\x00"


@dataclass(frozen=True, slots=True)
class Reconciled:
    """A native-coin intent address and the block times it is reconciled in (inclusive)."""

    address: str
    """Lowercase 0x-hex."""
    first_time: int
    last_time: int

    @classmethod
    def of_intent(cls, address: str, created_at: int, expires_at: int) -> Reconciled:
        """The window of an intent created and expiring at these Unix times."""
        return cls(address.lower(), created_at - BEFORE_CREATION, expires_at + AFTER_EXPIRY)

    def covers(self, block_time: int) -> bool:
        return self.first_time <= block_time <= self.last_time

    def overlaps(self, headers: Sequence[BlockHeader]) -> bool:
        return bool(headers) and (
            self.first_time <= headers[-1].timestamp and headers[0].timestamp <= self.last_time
        )


class Movement(NamedTuple):
    """A top-level transaction that moves an address's balance (before its receipt)."""

    block_number: int
    tx_hash: str
    address: str
    incoming: int
    """``value`` if the transaction is to the address (and succeeds)."""
    outgoing: int
    """``value`` if the transaction is from the address (and succeeds)."""
    sent: bool
    """The address sent it, so it pays the fee whether or not it succeeds."""


def movements(blocks: Sequence[Mapping[str, Any]], addresses: Collection[str]) -> list[Movement]:
    """The transactions of ``blocks`` (full) to (with value) or from any of ``addresses``."""
    found = []
    for block in blocks:
        number = int(block["number"], 16)
        for tx in block["transactions"]:
            sender = tx["from"].lower()
            to = (tx.get("to") or "").lower()
            value = int(tx["value"], 16)
            touched = {a for a in (sender, to) if a in addresses}
            for address in sorted(touched):
                incoming = value if to == address else 0
                sent = sender == address
                if incoming or sent:
                    found.append(
                        Movement(
                            number,
                            tx["hash"].lower(),
                            address,
                            incoming,
                            value if sent else 0,
                            sent,
                        )
                    )
    return found


def fee(receipt: Mapping[str, Any]) -> int:
    """What the sender of the receipt's transaction paid for it, in wei, as far as it shows."""
    paid = int(receipt["gasUsed"], 16) * int(receipt.get("effectiveGasPrice") or "0x0", 16)
    paid += int(receipt.get("l1Fee") or "0x0", 16)  # OP stack: the L1 data fee
    blob_gas = receipt.get("blobGasUsed")
    if blob_gas:
        paid += int(blob_gas, 16) * int(receipt.get("blobGasPrice") or "0x0", 16)
    return paid


def explained_change(movement: Movement, receipt: Mapping[str, Any]) -> int:
    """How much the transaction changed the address's balance (negative: it left)."""
    change = 0
    if int(receipt["status"], 16) == 1:
        change += movement.incoming - movement.outgoing
    if movement.sent:
        change -= fee(receipt)
    return change


def explained(
    moved: Sequence[Movement],
    receipts: Mapping[str, Mapping[str, Any]],
    block_hashes: Mapping[int, str],
) -> dict[str, dict[int, dict[str, int]]]:
    """What each of the ``moved`` transactions explains of its address's balance change:
    ``{address: {block number: {tx hash: wei}}}``.

    ``receipts`` by transaction hash; ``block_hashes`` the hash of each block read, by
    number. A receipt from another block than the transaction's raises
    :class:`~intentd.chain.errors.InconsistentAnswer` (the node reorganised between
    the reads, or answered from another fork).
    """
    found: dict[str, dict[int, dict[str, int]]] = {}
    for movement in moved:
        receipt = receipts[movement.tx_hash]
        if str(receipt.get("blockHash", "")).lower() != block_hashes.get(movement.block_number):
            raise InconsistentAnswer(
                f"receipt of {movement.tx_hash} is not from block {movement.block_number}"
            )
        by_tx = found.setdefault(movement.address, {}).setdefault(movement.block_number, {})
        by_tx[movement.tx_hash] = by_tx.get(movement.tx_hash, 0) + explained_change(
            movement, receipt
        )
    return found


def unexplained(before: int, after: int, explained_total: int) -> int:
    """What arrived otherwise than by the top-level transactions: the balance change
    minus what those transactions explain (``explained_total``, wei; positive: value
    arrived by internal calls)."""
    return after - before - explained_total


def is_reconciled(token: str, from_address: str) -> bool:
    """Whether a deposit as recorded is a reconciled one (found by its address's
    balance, not by a transaction to it): native, with no sender."""
    return token.lower() == NATIVE and from_address.lower() == UNKNOWN_SENDER


def reconciled_tx_hash(address: str, block_hash: str) -> str:
    """The synthetic transaction hash of the reconciled deposit to ``address`` in a block,
    identified by the block (when no transaction accounts for it, see
    :mod:`intentd.chain.evm.reconciled_ids`, and for the deposits recorded before).

    Not a transaction on chain: an identity, the same for the same block on every read.
    """
    material = _DOMAIN + bytes.fromhex(address[2:]) + bytes.fromhex(block_hash[2:])
    return "0x" + hashlib.sha256(material).hexdigest()


def reconciled_deposits(
    reconciled: Reconciled,
    headers: Sequence[BlockHeader],
    balances: Sequence[int],
    explained: Mapping[int, int],
) -> list[ChainTransfer]:
    """The reconciled deposits to ``reconciled.address`` in ``headers``, identified by
    their blocks.

    ``balances[0]`` is the address's balance before the first block, ``balances[i + 1]``
    after block ``headers[i]``; ``explained`` is what the block's top-level transactions
    explain (:func:`explained_change`, summed), by block number.
    """
    if len(balances) != len(headers) + 1:
        raise ValueError(f"{len(headers)} blocks need {len(headers) + 1} balances")
    found = []
    for i, header in enumerate(headers):
        amount = unexplained(balances[i], balances[i + 1], explained.get(header.number, 0))
        if amount > 0 and reconciled.covers(header.timestamp):
            found.append(
                ChainTransfer(
                    block_number=header.number,
                    block_hash=header.hash,
                    block_time=header.timestamp,
                    tx_hash=reconciled_tx_hash(reconciled.address, header.hash),
                    tx_index=AFTER_TRANSACTIONS,
                    log_index=NATIVE_LOG_INDEX,
                    token=NATIVE,
                    from_address=UNKNOWN_SENDER,
                    to_address=reconciled.address,
                    amount=amount,
                    transfer_index=NATIVE_LOG_INDEX,
                )
            )
    return found
