"""The transfer of an action as it will be signed: ``tx_plans.transfer_tx``, plus what
the chain charges on top of gas.

Guarantees:

- :meth:`TransferPlanner.transfer_plan` answers ``transfer_tx`` unchanged for every
  transfer but a native sweep (native coin, gas from its amount); only a native sweep
  asks the chain (``ports.L1Fees``).
- A native sweep also leaves the chain's L1 data fee bound, asked for the sweep as
  planned without it, plus ``execution.l1_fee_margin_bps`` at the address
  (``gas.l1_fee_reserve``; the bound is 0 unless the chain's ``l1_fee`` is
  ``op_stack``). Leaving less only shortens the transaction, so the bound still holds.
- :meth:`TransferPlanner.topup_plan` answers ``topup_tx`` for a token transfer an
  intent address signs, with the chain's L1 data fee bound for that transfer plus the
  margin added to what the gas tank sends (the address pays that fee on top of gas);
  :meth:`TransferPlanner.l1_reserve` is that reserve, which the token transfer's fees
  (first and replacements) leave out of the coin at the address.
- Without a bound it raises ``L1FeeUnavailable`` and plans nothing: the caller must
  not sign. The first transfer then waits (``execution.starting``); a replacement is
  not made (``execution.unsticking``). A sweep whose amount does not cover its gas and
  the reserve raises ``AmountBelowGas``.
- :data:`NO_L1_FEE` (a chain whose ``l1_fee`` is ``none``) answers 0 and asks nothing.
"""

from __future__ import annotations

from typing import Final

from intentd.domain.actions import Action
from intentd.execution.gas import Fees, l1_fee_reserve
from intentd.execution.ports import L1Fees
from intentd.execution.tx_plans import TxPlan, topup_tx, transfer_tx

__all__ = ["NO_L1_FEE", "TransferPlanner"]


class _NoL1Fee:
    async def upper_bound(self, plan: TxPlan) -> int:
        return 0


NO_L1_FEE: Final[L1Fees] = _NoL1Fee()
"""A chain that charges no L1 data fee."""


class TransferPlanner:
    """Plans the transfers of one chain: its first transaction and its replacements."""

    def __init__(self, l1_fees: L1Fees, *, l1_fee_margin_bps: int) -> None:
        self._l1_fees = l1_fees
        self._margin_bps = l1_fee_margin_bps

    async def transfer_plan(self, action: Action, gas_limit: int, fees: Fees) -> TxPlan:
        """``transfer_tx``; a native sweep (gas from its amount) also leaves the chain's
        L1 data fee bound plus the margin (0 unless ``l1_fee = "op_stack"``)."""
        plan = transfer_tx(action, gas_limit, fees)
        if not (action.native and action.gas_from_amount):
            return plan
        return transfer_tx(action, gas_limit, fees, l1_reserve=await self.l1_reserve(plan))

    async def topup_plan(
        self,
        action: Action,
        sender: str,
        gas_limit: int,
        fees: Fees,
        *,
        headroom_bps: int,
        credit: int,
    ) -> TxPlan | None:
        """The gas tank's top-up of ``sender`` (an intent address) for the token transfer
        of ``action``: its gas with headroom, and the chain's L1 data fee bound for that
        transfer plus the margin (0 unless ``l1_fee = "op_stack"``), less ``credit``."""
        return topup_tx(
            sender,
            gas_limit,
            fees,
            headroom_bps=headroom_bps,
            credit=credit,
            l1_reserve=await self.l1_reserve(transfer_tx(action, gas_limit, fees)),
        )

    async def l1_reserve(self, plan: TxPlan) -> int:
        """The chain's L1 data fee bound for ``plan`` plus the margin (0 unless
        ``l1_fee = "op_stack"``): what its signer must hold beyond ``plan``'s gas."""
        return l1_fee_reserve(await self._l1_fees.upper_bound(plan), self._margin_bps)
