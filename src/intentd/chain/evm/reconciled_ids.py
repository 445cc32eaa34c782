"""Which transactions a reconciled deposit came from: its identity across forks (pure).

Balance reconciliation (:mod:`intentd.chain.evm.balances`) finds, per block, the ETH that
reached an intent address through a contract. Identified by its block, such a deposit
would not survive a reorg that mines the paying transaction in another block: it would
be retracted and come back under a new identity, as a new (late) deposit, while the
actions held by the retraction wait for a deposit that never returns. A token deposit
is identified by its transaction instead (docs/indexer.md, Identity); so is this one,
when the chain's ``reconciled_identity`` is ``transaction`` (the default):

- the node traces the block (``debug_traceBlockByHash`` with geth's ``prestateTracer``
  in ``diffMode``, :data:`TRACER`): each transaction's balance changes. For an address
  and each transaction *T* of the block, the address's balance change in *T*, minus
  what *T* explains at top level (:func:`intentd.chain.evm.balances.explained`: its value
  to the address, or sent by it and its fee), is what *T* paid through contracts;
- each positive one is a deposit of that amount identified by (address, *T*)
  (:func:`reconciled_by_transaction`), whatever block *T* is mined in: the same payment
  re-mined at another height is the same deposit (relocated, its holds released), and
  two payments are two transactions, so two deposits, in one block or in two;
- only when those amounts are none negative and add up exactly to the block's
  reconciled deposit (its unexplained balance change): the total credited for a block
  is what its balances show, however it is split. Otherwise (value that arrived outside
  any transaction, such as a withdrawal or a chain's system credit; a trace that does
  not fit the block or the balances) the deposit keeps its block identity.

The trace is read only for the blocks where a reconciled deposit was found. Being
deterministic for the same block and trace, the poller and trigger-processing give the
same deposits the same identities.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from intentd.chain.transfers import ChainTransfer

__all__ = [
    "TRACER",
    "TracedChange",
    "by_transaction",
    "reconciled_by_transaction",
    "traced_changes",
]

TRACER: dict[str, Any] = {
    "tracer": "prestateTracer",
    "tracerConfig": {"diffMode": True, "disableCode": True, "disableStorage": True},
}
"""The options of ``debug_traceBlockByHash``: per transaction, the accounts it changed,
their balance and nonce before (``pre``) and the fields that changed after (``post``)."""
_DOMAIN = b"intentd reconciled deposit by transaction\x00"


class TracedChange(NamedTuple):
    """An address's balance change in one transaction of a block, as traced."""

    tx_hash: str
    tx_index: int
    change: int


def reconciled_by_transaction(address: str, tx_hash: str) -> str:
    """The synthetic transaction hash of what transaction ``tx_hash`` paid ``address``
    through contracts: the same in whatever block the transaction is mined. Not a
    transaction on chain (and never one's hash: a domain-separated SHA-256)."""
    material = _DOMAIN + bytes.fromhex(address[2:]) + bytes.fromhex(tx_hash[2:])
    return "0x" + hashlib.sha256(material).hexdigest()


def traced_changes(
    trace: Sequence[Any], transactions: Sequence[Any], address: str
) -> list[TracedChange] | None:
    """The balance change of ``address`` in each of the block's ``transactions`` (full),
    from the node's ``trace`` of the block (:data:`TRACER`), in block order; None when
    the trace does not describe those transactions (another count, another hash, an
    entry that failed).

    An account a transaction did not change is in neither ``pre`` nor ``post``; one it
    created is in ``post`` only (it had nothing); a field ``post`` leaves out did not
    change.
    """
    if len(trace) != len(transactions):
        return None
    found = []
    for index, (entry, tx) in enumerate(zip(trace, transactions, strict=True)):
        if not isinstance(entry, Mapping) or not isinstance(tx, Mapping):
            return None
        tx_hash = str(tx.get("hash", "")).lower()
        named = entry.get("txHash")
        result = entry.get("result")
        if (named is not None and str(named).lower() != tx_hash) or not isinstance(result, Mapping):
            return None
        before = _balance(result.get("pre"), address)
        after = _balance(result.get("post"), address)
        change = 0 if after is None else after - (before or 0)
        if change:
            found.append(TracedChange(tx_hash, index, change))
    return found


def by_transaction(
    deposit: ChainTransfer, changes: Sequence[TracedChange], explained: Mapping[str, int]
) -> list[ChainTransfer] | None:
    """``deposit`` (a block's reconciled deposit) split by the transactions that paid it,
    each identified by (address, transaction); None when they do not account for it.

    ``changes``: the address's traced balance change per transaction of the block;
    ``explained``: what each transaction explains at top level, by hash.
    """
    paid = {c.tx_hash: c.change - explained.get(c.tx_hash, 0) for c in changes}
    if any(amount and tx_hash not in paid for tx_hash, amount in explained.items()):
        return None  # a transaction that moved the balance, and the trace did not see it
    if any(amount < 0 for amount in paid.values()) or sum(paid.values()) != deposit.amount:
        return None
    return [
        deposit._replace(
            tx_hash=reconciled_by_transaction(deposit.to_address, c.tx_hash),
            tx_index=c.tx_index,
            amount=paid[c.tx_hash],
        )
        for c in changes
        if paid[c.tx_hash] > 0
    ]


def _balance(accounts: Any, address: str) -> int | None:
    """The balance ``accounts`` (a ``pre`` or ``post`` map) gives ``address``, or None."""
    if not isinstance(accounts, Mapping):
        return None
    for account, state in accounts.items():
        if str(account).lower() == address and isinstance(state, Mapping):
            balance = state.get("balance")
            return None if balance is None else int(str(balance), 16)
    return None
