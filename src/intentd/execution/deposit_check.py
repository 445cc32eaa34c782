"""Second-provider confirmation of the deposits behind a prefill: the decisions (pure).

A prefill cannot be undone, and the deposits it pays for were credited as one RPC
provider reported them. On a source chain whose token sets ``verify_above``, an intent
whose credited deposits of that token sum above the threshold gets each of them
confirmed by a second, independent provider (``verify_rpc_urls``) before the prefill
is signed (``execution.deposit_verifier`` does the reads; docs/execution.md).

A deposit is confirmed when the second provider says, at its own ``head`` minus the
chain's ``confirmations``:

- the block at the deposit's height has the deposit's block hash, deep enough;
- for a transaction deposit: its receipt is in that block with status 1, and
  (ERC-20) the ``transfer_index``-th ``Transfer`` log of the token contract in the
  receipt pays the intent address the same amount, or (native) the transaction sends
  the same value to the intent address;
- for a reconciled deposit (a synthetic ``tx_hash``, ``indexer.balances``): the
  intent address's balance rose by at least the amount across that block (balance at
  the block hash minus balance at its parent hash).

Anything else (missing, other block, other amount, not deep enough) is *unconfirmed*:
the prefill waits (:func:`retry_delay`), and after ``execution.unconfirmed_alert_after``
an operator alert is raised (the executor). Nothing is ever paid on an unconfirmed
deposit, nor dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intentd.backoff import Backoff
from intentd.domain.actions import NATIVE

__all__ = [
    "TRANSFER_TOPIC",
    "Credited",
    "check_balance",
    "check_receipt",
    "deep_enough",
    "needs_check",
    "retry_delay",
]

TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
"""keccak256("Transfer(address,address,uint256)")."""
_FIRST_WAIT = 5.0
_LONGEST_WAIT = 120.0


@dataclass(frozen=True, slots=True)
class Credited:
    """A credited deposit as stored (lowercase hex; ``token`` is :data:`NATIVE` or a
    contract; ``transfer_index`` None only for rows recorded before migration 0005)."""

    tx_hash: str
    token: str
    transfer_index: int | None
    to_address: str
    amount: int
    block_number: int
    block_hash: str


def needs_check(deposits: Sequence[Credited], threshold: int | None) -> bool:
    """Whether the deposits must be confirmed: their sum is above ``threshold`` (base
    units); ``None`` means the token is never checked."""
    return threshold is not None and sum(d.amount for d in deposits) > threshold


def deep_enough(deposit: Credited, head: int, confirmations: int) -> bool:
    """The deposit's block has ``confirmations`` blocks on the second provider's head."""
    return head - deposit.block_number + 1 >= confirmations


def check_receipt(
    deposit: Credited, receipt: Mapping[str, Any] | None, tx: Mapping[str, Any] | None
) -> str | None:
    """Why ``receipt`` (and, for the native coin, ``tx``: the transaction) does not
    confirm the deposit, or None when it does."""
    if receipt is None:
        return "no receipt"
    if str(receipt.get("blockHash", "")).lower() != deposit.block_hash:
        return f"receipt in block {receipt.get('blockHash')}, not {deposit.block_hash}"
    if int(str(receipt.get("status", "0x0")), 16) != 1:
        return "transaction failed"
    if deposit.token == NATIVE:
        if tx is None:
            return "no transaction"
        to = str(tx.get("to") or "").lower()
        value = int(str(tx.get("value", "0x0")), 16)
        if to != deposit.to_address or value != deposit.amount:
            return f"transaction sends {value} to {to}"
        return None
    transfers = [
        log
        for log in receipt.get("logs", [])
        if str(log.get("address", "")).lower() == deposit.token
        and log.get("topics")
        and str(log["topics"][0]).lower() == TRANSFER_TOPIC
    ]
    paid = [_paid(log) for log in transfers]
    wanted = (deposit.to_address, deposit.amount)
    if deposit.transfer_index is None:  # recorded before positions were kept
        return None if wanted in paid else f"no Transfer of {deposit.amount} to the intent"
    if deposit.transfer_index >= len(paid):
        return f"no Transfer log #{deposit.transfer_index} of {deposit.token}"
    if paid[deposit.transfer_index] != wanted:
        to, amount = paid[deposit.transfer_index]
        return f"Transfer log pays {amount} to {to}"
    return None


def _paid(log: Mapping[str, Any]) -> tuple[str, int]:
    topics = log["topics"]
    to = "0x" + str(topics[2])[-40:].lower() if len(topics) > 2 else ""
    data = str(log.get("data") or "0x")
    return to, int(data, 16) if data != "0x" else 0


def check_balance(deposit: Credited, before: int, after: int) -> str | None:
    """Why a balance change across the deposit's block does not confirm a reconciled
    deposit, or None when it does (it rose by at least the amount)."""
    if after - before < deposit.amount:
        return f"balance rose by {after - before} across the block, not {deposit.amount}"
    return None


def retry_delay(waited: float) -> float:
    """Seconds before the next try, after ``waited`` seconds unconfirmed: doubling from
    5 s, at most 2 min (a provider that lags a few blocks catches up quickly)."""
    due = min(waited, _LONGEST_WAIT)
    return next(d for d in Backoff(_FIRST_WAIT, cap=_LONGEST_WAIT).delays() if d >= due)
