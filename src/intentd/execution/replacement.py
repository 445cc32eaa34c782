"""Replacing a stuck transaction, and who signs what: pure decisions, no I/O.

A replacement has the stuck transaction's nonce, signer, gas limit and recipient, and
both fee fields raised by at least 12.5 % (``gas.bumped_fees``), never above the
chain's cap nor, for a transfer an intent address signs with gas from a top-up, above
what the coin at the address pays for (:func:`replacement_cap`). A native sweep that
pays its own gas sends less at higher fees; when nothing would be left, or the cap
forbids a bump, there is no replacement (:func:`replacement_plan` answers None) and
the transaction keeps waiting. The L1 data fee a native sweep on an OP-stack chain
leaves is not in this plan: it needs the chain's oracle, so ``execution.unsticking``
plans the replacement transfer again at these fees (``execution.transfer_planner``).
"""

from __future__ import annotations

from collections.abc import Sequence

from intentd.domain.actions import Action, SignerKind
from intentd.execution.gas import AmountBelowGas, affordable_fee, bumped_fees
from intentd.execution.tracking import Tx, TxStatus
from intentd.execution.tx_plans import Purpose, TxPlan, needs_topup, transfer_tx

__all__ = ["needs_budget", "replacement_cap", "replacement_plan", "signer_of", "topup_budget"]


def topup_budget(history: Sequence[Tx]) -> int:
    """Native coin the newest confirmed top-up brought (what the transfer may spend)."""
    for tx in reversed(history):
        if tx.purpose is Purpose.GAS_TOPUP and tx.status is TxStatus.CONFIRMED:
            return tx.value
    return 0


def signer_of(action: Action, purpose: Purpose) -> tuple[SignerKind, int | None]:
    """Who signs the action's transaction of ``purpose``: the gas tank its top-ups, the
    action's signer its transfer."""
    if purpose is Purpose.GAS_TOPUP:
        return SignerKind.GAS_TANK, None
    return action.signer_kind, action.signer_index


def replacement_cap(chain_cap: int, action: Action, stale: Tx, budget: int) -> int:
    """The highest fee a replacement of ``stale`` may offer: the chain's cap, and when
    :func:`needs_budget`, what ``budget`` (the coin at the address) affords."""
    if needs_budget(action, stale):
        return min(chain_cap, affordable_fee(budget, stale.gas_limit))
    return chain_cap


def needs_budget(action: Action, stale: Tx) -> bool:
    """Whether :func:`replacement_cap` needs the coin at the signing address."""
    return stale.purpose is Purpose.TRANSFER and needs_topup(action)


def replacement_plan(
    action: Action, stale: Tx, *, base_fee: int, tip: int, cap: int
) -> TxPlan | None:
    """The same-nonce replacement of ``stale`` at today's market, or None if none can be
    made (the cap forbids the bump, or a native sweep would send nothing)."""
    fees = bumped_fees(stale.fees, base_fee, tip, cap)
    if fees is None:
        return None
    if stale.purpose is Purpose.GAS_TOPUP:
        return TxPlan(Purpose.GAS_TOPUP, stale.to, stale.value, b"", stale.gas_limit, fees)
    try:
        return transfer_tx(action, stale.gas_limit, fees)
    except AmountBelowGas:
        return None
