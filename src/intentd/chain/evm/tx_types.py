"""Which transaction types can credit native value to their ``to``, and with what proof.

Pure. A transaction carrying value to a watched address is only a candidate
(``decoding.NativeCandidate``); it becomes a deposit when its type is one whose
``value`` really moves from the sender to ``to`` and its receipt says it succeeded
(``status`` 1). Every type of the chains we configure is listed on purpose (see
``docs/indexer.md``, *What counts as a deposit*); a type not listed is never credited
(fail closed), it is logged and counted so an operator can look.

- ``0x0``-``0x4`` (legacy, access list, dynamic fee, blob, set-code): ordinary
  transactions. The value moves only if the transaction succeeds: a set-code
  (EIP-7702) delegation or any code at ``to`` can revert it.
- ``0x7e`` (OP-stack deposit, BASE and BASE_TESTNET): always included, even when its
  execution fails; then the ``mint`` stays with ``from`` and the value transfer to
  ``to`` is reverted, and the receipt has status 0. Credited only with status 1.
- ``0x64`` (Arbitrum ETH deposit): the value is minted to ``from`` and moved to ``to``
  by ArbOS; credited with status 1, like any other.
- ``0x65``, ``0x66`` (Arbitrum unsigned and contract transactions from the parent
  chain): ordinary calls; credited with status 1.
- ``0x68`` (Arbitrum retry transaction, the redeem of a retryable ticket): the value
  moves from the ticket's escrow to ``to`` only if it succeeds; credited with status 1.
- ``0x69`` (Arbitrum submit-retryable): the value goes to the retryable's escrow,
  not to ``to``; never credited from this transaction (its redeem, a ``0x68``, is).
- ``0x6a`` (ArbOS internal): never carries a user's value; never credited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.decoding import NativeCandidate
from intentd.chain.transfers import ChainTransfer

__all__ = ["Credit", "credit_of", "needs_receipt", "settle_natives"]


class Credit(Enum):
    WITH_RECEIPT = "with_receipt"
    """The value reaches ``to`` if and only if the receipt's status is 1."""
    NEVER = "never"
    """The value never reaches ``to`` through this transaction."""


TX_TYPES: Mapping[int, Credit] = {
    0x00: Credit.WITH_RECEIPT,  # legacy
    0x01: Credit.WITH_RECEIPT,  # EIP-2930 access list
    0x02: Credit.WITH_RECEIPT,  # EIP-1559 dynamic fee
    0x03: Credit.WITH_RECEIPT,  # EIP-4844 blob
    0x04: Credit.WITH_RECEIPT,  # EIP-7702 set code
    0x7E: Credit.WITH_RECEIPT,  # OP-stack deposit: included even when it fails
    0x64: Credit.WITH_RECEIPT,  # Arbitrum ETH deposit
    0x65: Credit.WITH_RECEIPT,  # Arbitrum unsigned tx from the parent chain
    0x66: Credit.WITH_RECEIPT,  # Arbitrum contract tx from the parent chain
    0x68: Credit.WITH_RECEIPT,  # Arbitrum retry tx: value from the escrow if it succeeds
    0x69: Credit.NEVER,  # Arbitrum submit-retryable: value goes to the escrow
    0x6A: Credit.NEVER,  # ArbOS internal
}
"""Every transaction type we know; any other is never credited."""


def credit_of(tx_type: int) -> Credit:
    return TX_TYPES.get(tx_type, Credit.NEVER)


def needs_receipt(candidate: NativeCandidate) -> bool:
    """Whether the candidate can count at all (then its receipt decides)."""
    return credit_of(candidate.tx_type) is Credit.WITH_RECEIPT


def settle_natives(
    candidates: Sequence[NativeCandidate], receipts: Mapping[str, Mapping[str, Any]]
) -> tuple[list[ChainTransfer], list[NativeCandidate]]:
    """(deposits, refused): the candidates whose value reached ``to``, and the others.

    ``receipts`` holds the receipt of every candidate that :func:`needs_receipt`, by
    transaction hash. A receipt missing, or from a block other than the candidate's
    (the node answered from two forks), raises :class:`InconsistentAnswer`.
    """
    deposits: list[ChainTransfer] = []
    refused: list[NativeCandidate] = []
    for candidate in candidates:
        deposit = candidate.deposit
        if not needs_receipt(candidate):
            refused.append(candidate)
            continue
        receipt = receipts.get(deposit.tx_hash)
        if receipt is None:
            raise InconsistentAnswer(f"no receipt for transaction {deposit.tx_hash}")
        if str(receipt.get("blockHash", "")).lower() != deposit.block_hash:
            raise InconsistentAnswer(
                f"receipt of {deposit.tx_hash} is from another block than the transaction"
            )
        if int(receipt.get("status") or "0x0", 16) == 1:
            deposits.append(deposit)
        else:
            refused.append(candidate)
    return deposits, refused
