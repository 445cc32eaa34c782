"""What transactions an action needs, and their fields: pure, no I/O.

An action moves ``amount`` of ``token`` to ``to_address`` on its chain, signed by
the relayer, the gas tank or an intent address. It takes one or two transactions:

- a ``transfer``: the native coin as the transaction's value, or an ERC-20
  ``transfer(to, amount)`` call to the token contract;
- before it, a ``gas_topup`` from the gas tank, when an intent address signs an
  ERC-20 transfer (an intent address holds no native coin of its own to spend).

The action itself (:class:`~intentd.domain.actions.Action`, its kinds and signers) is
defined in ``domain.actions``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from intentd.domain.actions import Action, SignerKind
from intentd.execution.gas import Fees, native_sweep_value, topup_after_credit, topup_value

__all__ = [
    "Purpose",
    "TxPlan",
    "erc20_transfer_data",
    "needs_topup",
    "topup_tx",
    "transfer_tx",
]

_TRANSFER_SELECTOR = bytes.fromhex("a9059cbb")  # transfer(address,uint256)


class Purpose(enum.StrEnum):
    TRANSFER = "transfer"
    """The transaction that moves the action's money."""
    GAS_TOPUP = "gas_topup"
    """Native coin from the gas tank to the intent address that signs the transfer."""


@dataclass(frozen=True, slots=True)
class TxPlan:
    """Every field of a transaction but the nonce and the signature."""

    purpose: Purpose
    to: str
    value: int
    data: bytes
    gas_limit: int
    fees: Fees


def erc20_transfer_data(to: str, amount: int) -> bytes:
    """ABI calldata of ``transfer(to, amount)``."""
    if not 0 <= amount < 2**256:
        raise ValueError(f"amount {amount} does not fit uint256")
    return _TRANSFER_SELECTOR + bytes(12) + bytes.fromhex(to[2:]) + amount.to_bytes(32, "big")


def needs_topup(action: Action) -> bool:
    """An ERC-20 transfer signed by an intent address needs gas from the gas tank first."""
    return action.signer_kind is SignerKind.INTENT and not action.native


def transfer_tx(action: Action, gas_limit: int, fees: Fees, *, l1_reserve: int = 0) -> TxPlan:
    """The transfer of ``action``. A native transfer with ``gas_from_amount`` sends
    ``amount - gas_limit * max_fee - l1_reserve`` (``l1_reserve``: the OP-stack L1 data
    fee it leaves; raises ``AmountBelowGas`` if nothing is left)."""
    if action.native:
        value = action.amount
        if action.gas_from_amount:
            value = native_sweep_value(action.amount, gas_limit, fees, l1_reserve)
        return TxPlan(Purpose.TRANSFER, action.to_address, value, b"", gas_limit, fees)
    data = erc20_transfer_data(action.to_address, action.amount)
    return TxPlan(Purpose.TRANSFER, action.token, 0, data, gas_limit, fees)


def topup_tx(
    intent_address: str,
    transfer_gas_limit: int,
    fees: Fees,
    *,
    headroom_bps: int,
    credit: int = 0,
    l1_reserve: int = 0,
) -> TxPlan | None:
    """The gas tank's top-up of ``intent_address`` for a transfer of ``transfer_gas_limit``
    gas at ``fees`` (plus headroom for replacements) and ``l1_reserve`` (the L1 data fee
    an OP-stack chain charges the transfer on top, 0 elsewhere), less the tank's
    ``credit`` already at the address; None when the credit covers it all. The top-up
    itself pays the tank's fees for a plain transfer."""
    if l1_reserve < 0:
        raise ValueError(f"negative L1 fee reserve {l1_reserve}")
    need = topup_value(transfer_gas_limit, fees, headroom_bps) + l1_reserve
    value = topup_after_credit(need, credit)
    if value == 0:
        return None
    return TxPlan(Purpose.GAS_TOPUP, intent_address, value, b"", 21_000, fees)
