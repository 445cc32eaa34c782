"""Fee arithmetic: integers in base units of the paid token, rounded in the service's favour.

The model (see docs/api.md, Fees): the recipient gets ``amount``; the payer sends

    total = amount + route fee + application fee

where each fee is ``fixed_usd`` converted to the paid token at its USD price, plus
``bps`` basis points of ``amount``. Every fee is rounded *up* to a whole base unit,
so the service never charges less than the schedule; it never charges a full unit
more than the exact figure per term. USD figures are exact decimals of the rounded
base units, so ``usd(total) == usd(amount) + usd(route fee) + usd(app fee)``.

Pure: no I/O, no floats.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

__all__ = [
    "BPS",
    "FeeBreakdown",
    "FeeSchedule",
    "MissingPrice",
    "ceil_fraction",
    "charge",
    "convert_units",
    "to_usd",
]

BPS = 10_000
"""Basis points in a whole."""


class MissingPrice(ValueError):
    """A fixed USD fee or a USD conversion needs a price the price source does not know."""


@dataclass(frozen=True, slots=True)
class FeeSchedule:
    """A fee: ``fixed_usd`` per intent plus ``bps`` basis points of the amount."""

    fixed_usd: Decimal = Decimal(0)
    bps: Decimal = Decimal(0)

    def __post_init__(self) -> None:
        if not (self.fixed_usd.is_finite() and self.bps.is_finite()):
            raise ValueError("fee figures must be finite")
        if self.fixed_usd < 0 or not 0 <= self.bps <= BPS:
            raise ValueError(f"invalid fee schedule {self.fixed_usd} USD + {self.bps} bps")


@dataclass(frozen=True, slots=True)
class FeeBreakdown:
    """What the payer owes, in base units of the paid token."""

    amount: int
    route_fee: int
    app_fee: int

    @property
    def total(self) -> int:
        return self.amount + self.route_fee + self.app_fee


def ceil_fraction(value: Fraction) -> int:
    """The smallest integer not below ``value``."""
    return -((-value.numerator) // value.denominator)


def _fee(amount: int, schedule: FeeSchedule, decimals: int, price: Decimal | None) -> int:
    exact = Fraction(amount) * Fraction(schedule.bps) / BPS
    if schedule.fixed_usd:
        if price is None:
            raise MissingPrice("a fixed USD fee needs the token's USD price")
        exact += Fraction(schedule.fixed_usd) * 10**decimals / Fraction(price)
    return ceil_fraction(exact)


def charge(
    amount: int,
    decimals: int,
    price: Decimal | None,
    *,
    route: FeeSchedule,
    app: FeeSchedule,
) -> FeeBreakdown:
    """The route and application fees on ``amount`` base units of a token.

    ``price`` is the token's USD price (None when unknown: only fees without a fixed
    USD part can be computed then; otherwise :class:`MissingPrice`).
    """
    if amount < 0 or decimals < 0:
        raise ValueError("amount and decimals must not be negative")
    if price is not None and price <= 0:
        raise ValueError("a price must be positive")
    return FeeBreakdown(
        amount=amount,
        route_fee=_fee(amount, route, decimals, price),
        app_fee=_fee(amount, app, decimals, price),
    )


def to_usd(units: int, decimals: int, price: Decimal) -> Decimal:
    """The exact USD value of ``units`` base units at ``price`` (no rounding)."""
    with localcontext() as ctx:
        ctx.prec = 200
        value = Decimal(units) * price / (Decimal(10) ** decimals)
        return value.normalize() if value else Decimal(0)


def convert_units(
    value: Fraction, from_price: Decimal, to_price: Decimal, to_decimals: int, *, round_up: bool
) -> int:
    """Base units of a token (``to_price`` USD, ``to_decimals``) worth ``value`` whole units
    of something priced ``from_price`` USD; rounded up (what a payer owes) or down (what a
    recipient is promised)."""
    if from_price <= 0 or to_price <= 0:
        raise ValueError("prices must be positive")
    exact = value * Fraction(from_price) / Fraction(to_price) * 10**to_decimals
    if round_up:
        return ceil_fraction(exact)
    floor: int = exact.numerator // exact.denominator
    return floor
