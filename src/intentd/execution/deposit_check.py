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
- for the reconciled deposits of a block (ETH that arrived through a contract, found by
  balance reconciliation, ``chain.evm.balances``; recorded with no sender): together, per
  intent address, at most what the second provider's own reconciliation of that block
  leaves unexplained: the balance at the block hash minus the balance at its parent
  hash, minus what the block's top-level transactions to and from the address explain
  by their receipts (the same arithmetic as the poller's, :func:`check_reconciled`). A
  top-level payment is credited on its own, so it cannot also stand for a claim.

Anything else (missing, other block, other amount, not deep enough) is *unconfirmed*
(:class:`Unconfirmed`): the prefill waits (:func:`retry_delay`), and after
``execution.unconfirmed_alert_after`` an operator alert is raised (the executor).
Nothing is ever paid on an unconfirmed deposit, nor dropped. A provider that lags (no
block at that height, no receipt yet, an error) only makes the prefill wait; when it
has everything and still says otherwise, the deposit is *contradicted*: evidence that
the provider that reported it lied or is broken, alerted at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intentd.backoff import Backoff
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.balances import explained, is_reconciled, movements, unexplained
from intentd.domain.actions import NATIVE

__all__ = [
    "TRANSFER_TOPIC",
    "Credited",
    "Unconfirmed",
    "check_receipt",
    "check_reconciled",
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
    from_address: str = ""
    """The sender as recorded; the zero address for a reconciled deposit."""

    @property
    def reconciled(self) -> bool:
        """Found by balance reconciliation (no transaction to the address pays it)."""
        return is_reconciled(self.token, self.from_address)


@dataclass(frozen=True, slots=True)
class Unconfirmed:
    """Why the second provider does not confirm a deposit."""

    reason: str
    contradicted: bool = False
    """The provider has the block and everything it needs, and the chain does not pay
    what was credited: evidence against the provider that reported it, not a lag."""


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


def reconciled_movements(address: str, block: Mapping[str, Any]) -> list[str]:
    """The transactions of ``block`` (full) whose receipts :func:`check_reconciled` needs
    for ``address``: those to it with value, or from it."""
    return sorted({m.tx_hash for m in movements([block], {address})})


def check_reconciled(
    claims: Sequence[Credited],
    block: Mapping[str, Any],
    receipts: Mapping[str, Mapping[str, Any] | None],
    before: int,
    after: int,
) -> Unconfirmed | None:
    """Why the reconciled deposits ``claims`` (to one address, in ``block``) are not
    confirmed, or None when they are.

    ``block`` is the second provider's block (full transactions), ``receipts`` its
    receipts of :func:`reconciled_movements`, ``before`` and ``after`` the address's
    balance at the block's parent and at the block. The claims must fit, together, in
    what the block's top-level transactions leave unexplained.
    """
    [address] = {c.to_address for c in claims}
    number, block_hash = int(str(block["number"]), 16), str(block["hash"]).lower()
    moved = movements([block], {address})
    missing = sorted({m.tx_hash for m in moved if receipts.get(m.tx_hash) is None})
    if missing:
        return Unconfirmed(f"no receipt of {missing[0]}")
    found = {m.tx_hash: receipts[m.tx_hash] or {} for m in moved}
    try:
        by_tx = explained(moved, found, {number: block_hash})
    except InconsistentAnswer as exc:
        return Unconfirmed(str(exc))
    rise = unexplained(before, after, sum(by_tx.get(address, {}).get(number, {}).values()))
    claimed = sum(c.amount for c in claims)
    if claimed > rise:
        return Unconfirmed(
            f"{claimed} reconciled in block {number}, but only {rise} is unexplained by its"
            " transactions",
            contradicted=True,
        )
    return None


def retry_delay(waited: float) -> float:
    """Seconds before the next try, after ``waited`` seconds unconfirmed: doubling from
    5 s, at most 2 min (a provider that lags a few blocks catches up quickly)."""
    due = min(waited, _LONGEST_WAIT)
    return next(d for d in Backoff(_FIRST_WAIT, cap=_LONGEST_WAIT).delays() if d >= due)
