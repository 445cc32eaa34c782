"""Fee and gas arithmetic of the executor: pure integers in wei, no I/O.

Who bears which cost is written down in ``docs/execution.md``; the rules here:

- EIP-1559 fees: ``max_fee = 2 * base_fee + tip``, the tip is the node's
  ``eth_maxPriorityFeePerGas``; both are bounded by the chain's cap.
- A replacement of a stuck transaction raises both fees by at least 12.5 %
  (``ceil(x * 9 / 8)``), more if the market moved further; never above the cap.
- A native-coin sweep that pays its own gas sends ``amount - gas_limit * max_fee``:
  the most the transaction can cost comes out of the amount up front, and what the
  fee did not use stays at the sending address. On an OP-stack chain the node also
  charges an L1 data fee on top of the gas: the sweep then also leaves
  ``l1_fee_reserve`` (the oracle's bound plus a margin) out of the amount.
- A gas top-up for an ERC-20 transfer from an intent address is
  ``gas_limit * max_fee * (1 + headroom)``; the headroom pays for replacements.
  Gas the gas tank left at the address by earlier sweeps (its *credit* there, see
  ``docs/execution.md``) is used first: the top-up is only what the credit lacks.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "NATIVE_TRANSFER_GAS",
    "AmountBelowGas",
    "FeeCapExceeded",
    "Fees",
    "affordable_fee",
    "bumped_fees",
    "gas_cost",
    "gas_limit_with_margin",
    "initial_fees",
    "l1_fee_reserve",
    "native_sweep_value",
    "topup_after_credit",
    "topup_value",
]

NATIVE_TRANSFER_GAS = 21_000
"""Gas of a plain value transfer to an account without code (exact, by protocol)."""
BUMP_NUMERATOR, BUMP_DENOMINATOR = 9, 8
"""A replacement pays at least 12.5 % more (geth asks for 10 %, some nodes more)."""


class FeeCapExceeded(Exception):
    """The fee the market asks for is above the chain's cap: wait, do not sign."""


class AmountBelowGas(Exception):
    """A native amount that pays its own gas does not even cover the gas."""


@dataclass(frozen=True, slots=True)
class Fees:
    """EIP-1559 fee fields of one transaction, wei per gas."""

    max_fee_per_gas: int
    max_priority_fee_per_gas: int

    def __post_init__(self) -> None:
        if self.max_priority_fee_per_gas < 0 or self.max_fee_per_gas <= 0:
            raise ValueError(f"fees must be positive: {self}")
        if self.max_priority_fee_per_gas > self.max_fee_per_gas:
            raise ValueError(f"the tip exceeds the fee cap: {self}")


def initial_fees(base_fee: int, tip: int, cap: int) -> Fees:
    """Fees of a new transaction: twice the latest base fee plus the tip, at most ``cap``.

    Raises :class:`FeeCapExceeded` when ``cap`` is below the base fee (the
    transaction could not be included now).
    """
    if base_fee < 0 or tip < 0 or cap <= 0:
        raise ValueError(f"negative fee input: base {base_fee}, tip {tip}, cap {cap}")
    if base_fee >= cap:
        raise FeeCapExceeded(f"base fee {base_fee} wei is at or above the cap {cap} wei")
    max_fee = min(max(2 * base_fee + tip, 1), cap)  # 1 wei at least: a fee of 0 is invalid
    return Fees(max_fee, min(tip, max_fee - base_fee))


def _bump(value: int) -> int:
    return -(-value * BUMP_NUMERATOR // BUMP_DENOMINATOR)


def bumped_fees(old: Fees, base_fee: int, tip: int, cap: int) -> Fees | None:
    """Fees of a same-nonce replacement of ``old``, or None if the cap forbids one.

    Both fields rise by at least 12.5 %; the fee also covers twice the current base
    fee plus the current tip when the market moved further.
    """
    priority = max(_bump(old.max_priority_fee_per_gas), tip)
    max_fee = max(_bump(old.max_fee_per_gas), 2 * base_fee + priority)
    if max_fee > cap:
        return None
    return Fees(max_fee, priority)


def native_sweep_value(amount: int, gas_limit: int, fees: Fees, l1_reserve: int = 0) -> int:
    """What a native transfer that pays its own gas sends: ``amount`` less the most
    the gas can cost and less ``l1_reserve`` (the L1 data fee an OP-stack chain charges
    on top, 0 elsewhere). Raises :class:`AmountBelowGas` if nothing would be left."""
    if l1_reserve < 0:
        raise ValueError(f"negative L1 fee reserve {l1_reserve}")
    value = amount - gas_limit * fees.max_fee_per_gas - l1_reserve
    if value <= 0:
        raise AmountBelowGas(
            f"amount {amount} wei does not cover {gas_limit} gas at {fees.max_fee_per_gas} wei"
            f" and an L1 data fee reserve of {l1_reserve} wei"
        )
    return value


def l1_fee_reserve(bound: int, margin_bps: int) -> int:
    """What a native sweep leaves for the L1 data fee: the oracle's ``bound`` plus
    ``margin_bps`` (1/10,000), rounded up; the fee moves with L1 prices between the
    estimate and the inclusion."""
    if bound < 0 or margin_bps < 0:
        raise ValueError(f"negative L1 fee bound {bound} or margin {margin_bps}")
    return -(-bound * (10_000 + margin_bps) // 10_000)


def topup_value(gas_limit: int, fees: Fees, headroom_bps: int) -> int:
    """Native coin to send to an intent address so it can pay ``gas_limit`` at ``fees``
    and, with ``headroom_bps`` (1/10,000) more, some replacements."""
    if headroom_bps < 0:
        raise ValueError("headroom must not be negative")
    need = gas_limit * fees.max_fee_per_gas
    return -(-need * (10_000 + headroom_bps) // 10_000)


def topup_after_credit(need: int, credit: int) -> int:
    """What the gas tank still sends when the address already holds ``credit`` wei of
    earlier top-ups that no transaction is spending: 0 when the credit covers ``need``."""
    if need < 0 or credit < 0:
        raise ValueError(f"negative need {need} or credit {credit}")
    return max(need - credit, 0)


def affordable_fee(budget: int, gas_limit: int) -> int:
    """The highest ``max_fee_per_gas`` a signer holding ``budget`` wei can offer."""
    return budget // gas_limit


def gas_cost(gas_used: int, effective_gas_price: int, l1_fee: int = 0) -> int:
    """What a mined transaction cost its sender beyond its value, wei: its gas, plus the
    L1 data fee an OP-stack chain charges on top (``l1_fee``, 0 elsewhere)."""
    return gas_used * effective_gas_price + l1_fee


def gas_limit_with_margin(estimate: int, margin_bps: int = 2_500) -> int:
    """An estimate plus a safety margin (25 % by default): estimates are made against
    the state of the latest block and the transaction runs later."""
    return -(-estimate * (10_000 + margin_bps) // 10_000)
