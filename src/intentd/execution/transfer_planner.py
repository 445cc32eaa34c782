"""The transfer of an action as it will be signed: ``planning.plan_transfer``, plus what
the chain charges on top of gas.

Guarantees:

- :meth:`TransferPlanner.transfer_plan` answers ``plan_transfer`` unchanged for every
  transfer but a native sweep (native coin, gas from its amount); only a native sweep
  asks the chain (``ports.L1Fees``).
- A native sweep also leaves the chain's L1 data fee bound, asked for the sweep as
  planned without it, plus ``execution.l1_fee_margin_bps`` at the address
  (``gas.l1_fee_reserve``; the bound is 0 unless the chain's ``l1_fee`` is
  ``op_stack``). Leaving less only shortens the transaction, so the bound still holds.
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
from intentd.execution.planning import TxPlan, plan_transfer
from intentd.execution.ports import L1Fees

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
        """``plan_transfer``; a native sweep (gas from its amount) also leaves the chain's
        L1 data fee bound plus the margin (0 unless ``l1_fee = "op_stack"``)."""
        plan = plan_transfer(action, gas_limit, fees)
        if not (action.native and action.gas_from_amount):
            return plan
        bound = await self._l1_fees.upper_bound(plan)
        reserve = l1_fee_reserve(bound, self._margin_bps)
        return plan_transfer(action, gas_limit, fees, l1_reserve=reserve)
