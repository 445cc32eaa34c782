"""Revaluing an intent at the price of its payment: the arithmetic, pure.

An intent whose ``amount`` was converted at a price when it was created (an amount in
USD, or in another priced symbol than ``tokenIn``) owes its recipient that amount in
its denomination (:class:`Owed`), not a number of tokens. Its total was computed at
the prices of its creation; a payment is credited later, at other prices. When a
payment of such an intent is credited, :func:`revalue` prices the recipient's amount
again at the prices of that moment (:class:`Rate`):

- ``principal`` = what the owed amount costs in ``tokenIn`` at the rate: exactly the
  creation's computation (``V * q / p``, rounded **up** to a base unit of ``tokenIn``,
  then up to a whole base unit of ``tokenOut``), so at the creation's prices it is the
  creation's figure to the base unit;
- ``tolerance`` = ``floor(principal * slippage)``: what the relayer accepts to bear,
  rounded **down** (in the relayer's favour);
- if ``principal + fees - tolerance`` exceeds the total due, the price moved against
  the payer by more than the slippage: the total due is **raised** to
  ``principal + fees`` (the payer tops up the difference, or is refunded at expiry);
  otherwise it stands (a total is never lowered: a move in the payer's favour is the
  relayer's, as a move against the payer within the slippage is the relayer's loss);
- the recipient gets ``principal`` (in ``tokenOut`` units) once the total is covered,
  so never less than the amount owed at the rate used; the relayer is repaid the total
  less the fees, and bears ``principal - (total - fees)`` when that is positive, which
  is never more than ``tolerance`` (:attr:`Revaluation.relayer_bears`).

Fees are not revalued: they stay what the quote said, in ``tokenIn``.

:func:`lowest_price` is what a quote tells the payer: the lowest USD price of
``tokenIn`` at which a payment of exactly the quoted total still covers the intent.

Integers in base units; prices as exact ``Decimal``/``Fraction``; no floats.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

from intentd.domain.amounts import format_amount, rescale

__all__ = [
    "Owed",
    "PriceUsed",
    "Rate",
    "Revaluation",
    "highest_price",
    "largest_principal",
    "lowest_price",
    "principal_at",
    "render_valuation",
    "revalue",
    "tolerance",
]

BPS = 10_000


@dataclass(frozen=True, slots=True)
class PriceUsed:
    """One USD price a valuation used, and where it came from (as quotes show it)."""

    symbol: str
    usd: Decimal
    source: str
    """``chainlink``, ``static`` or ``peg``."""
    feed: str | None = None
    round_id: int | None = None
    updated_at: datetime | None = None
    observed: Decimal | None = None
    """A stablecoin's feed answer, when ``usd`` is its peg of 1."""

    def as_json(self) -> dict[str, Any]:
        return {
            "symbol": self.symbol,
            "usd": _decimal(self.usd),
            "source": self.source,
            "feed": self.feed,
            "round_id": None if self.round_id is None else str(self.round_id),
            "updated_at": None if self.updated_at is None else _time(self.updated_at),
            "feed_usd": None if self.observed is None else _decimal(self.observed),
        }

    @classmethod
    def of_json(cls, data: Mapping[str, Any]) -> PriceUsed:
        updated = data.get("updated_at")
        round_id = data.get("round_id")
        observed = data.get("feed_usd")
        return cls(
            symbol=str(data["symbol"]),
            usd=Decimal(str(data["usd"])),
            source=str(data["source"]),
            feed=data.get("feed"),
            round_id=None if round_id is None else int(round_id),
            updated_at=None if updated is None else datetime.fromisoformat(updated),
            observed=None if observed is None else Decimal(str(observed)),
        )


@dataclass(frozen=True, slots=True)
class Rate:
    """The prices a revaluation is made at."""

    token_in: Decimal
    """USD per whole ``tokenIn``."""
    denomination: Decimal
    """USD per whole unit of the owed symbol (1 for USD and stablecoins)."""
    used: tuple[PriceUsed, ...] = ()
    """The prices behind them, recorded with the credit (none for a peg of 1)."""

    def __post_init__(self) -> None:
        if not (self.token_in > 0 and self.denomination > 0):
            raise ValueError(f"prices must be positive: {self.token_in}, {self.denomination}")

    def as_json(self) -> dict[str, Any]:
        return {
            "token_in_usd": _decimal(self.token_in),
            "denomination_usd": _decimal(self.denomination),
            "prices": [p.as_json() for p in self.used],
        }

    @classmethod
    def of_json(cls, data: Mapping[str, Any]) -> Rate:
        return cls(
            Decimal(str(data["token_in_usd"])),
            Decimal(str(data["denomination_usd"])),
            tuple(PriceUsed.of_json(p) for p in data.get("prices", ())),
        )


@dataclass(frozen=True, slots=True)
class Owed:
    """What a revalued intent promises its recipient; fixed at creation."""

    amount: Decimal
    """In whole units of ``symbol`` (exact)."""
    symbol: str
    """``USD``, a stablecoin symbol, or another priced symbol."""
    slippage: Decimal
    """A fraction in [0, 1): the share of ``principal`` the relayer accepts to bear."""

    def __post_init__(self) -> None:
        if not self.amount > 0:
            raise ValueError(f"an owed amount must be positive, got {self.amount}")
        if not 0 <= self.slippage < 1:
            raise ValueError(f"slippage must be in [0, 1), got {self.slippage}")


@dataclass(frozen=True, slots=True)
class Revaluation:
    """What pricing the owed amount at a rate decided (base units)."""

    rate: Rate
    principal: int
    """``tokenIn`` the owed amount costs at the rate."""
    amount_out: int
    """``tokenOut`` the recipient gets (``principal`` in ``tokenOut`` units)."""
    total_due: int
    """The total due after the revaluation: the one before, or raised."""
    raised: bool
    tolerance: int
    """``floor(principal * slippage)``: the most the relayer bears."""
    relayer_bears: int
    """If the total is covered: ``tokenIn`` the relayer pays beyond its repayment
    (``principal - (total_due - fees)``, at least 0)."""


def principal_at(owed: Owed, rate: Rate, decimals_in: int, decimals_out: int) -> int:
    """Base units of ``tokenIn`` worth ``owed`` at ``rate``, rounded up to a base unit and
    then to a whole base unit of ``tokenOut`` (the creation's computation)."""
    exact = Fraction(owed.amount) * Fraction(rate.denomination) / Fraction(rate.token_in)
    units = _ceil(exact * 10**decimals_in)
    step = _step(decimals_in, decimals_out)
    return units + (-units) % step


def tolerance(principal: int, slippage: Decimal) -> int:
    """``floor(principal * slippage)``: rounded down, in the relayer's favour."""
    if principal < 0 or not 0 <= slippage < 1:
        raise ValueError(f"tolerance of {principal} at {slippage}")
    exact = principal * Fraction(slippage)
    return exact.numerator // exact.denominator


def revalue(
    owed: Owed,
    rate: Rate,
    *,
    total_due: int,
    fees: int,
    decimals_in: int,
    decimals_out: int,
) -> Revaluation:
    """Price ``owed`` at ``rate`` for an intent whose total due is ``total_due`` (of which
    ``fees`` are fees); see the module for the rules."""
    if total_due <= fees or fees < 0:
        raise ValueError(f"a total due of {total_due} with fees of {fees}")
    principal = principal_at(owed, rate, decimals_in, decimals_out)
    tolerated = tolerance(principal, owed.slippage)
    need = principal + fees
    raised = need - tolerated > total_due
    total = need if raised else total_due
    return Revaluation(
        rate=rate,
        principal=principal,
        amount_out=rescale(principal, decimals_in, decimals_out),
        total_due=total,
        raised=raised,
        tolerance=tolerated,
        relayer_bears=max(principal - (total - fees), 0),
    )


def largest_principal(
    slippage: Decimal, *, total_due: int, fees: int, decimals_in: int, decimals_out: int
) -> int:
    """The largest principal (a whole base unit of ``tokenOut``) that a total of
    ``total_due`` still covers without being raised: ``x - tolerance(x) <= total - fees``."""
    step = _step(decimals_in, decimals_out)
    spendable = total_due - fees
    if spendable < step:
        raise ValueError(f"a total of {total_due} with fees of {fees} pays no principal")
    # x - tolerance(x) never decreases as x grows: a binary search finds the largest.
    low = spendable // step  # tolerance >= 0: this one is covered
    high = _ceil(Fraction(spendable) / (1 - Fraction(slippage)) / step) + 1
    while low < high:
        middle = (low + high + 1) // 2
        x = middle * step
        if x - tolerance(x, slippage) <= spendable:
            low = middle
        else:
            high = middle - 1
    return low * step


def lowest_price(
    owed: Owed,
    denomination_usd: Decimal,
    *,
    total_due: int,
    fees: int,
    decimals_in: int,
    decimals_out: int,
) -> Fraction:
    """The lowest USD price of ``tokenIn`` at which :func:`revalue` keeps ``total_due``
    (a payment of exactly the total covers the intent), the owed symbol's price staying
    ``denomination_usd``. Exact; at any lower price the total is raised."""
    largest = largest_principal(
        owed.slippage, total_due=total_due, fees=fees, decimals_in=decimals_in,
        decimals_out=decimals_out,
    )  # fmt: skip
    # principal_at(p) <= largest  <=>  owed * q * 10^d / p <= largest
    found: Fraction = Fraction(owed.amount) * Fraction(denomination_usd) * 10**decimals_in / largest
    return found


def highest_price(
    owed: Owed,
    token_in_usd: Decimal,
    *,
    total_due: int,
    fees: int,
    decimals_in: int,
    decimals_out: int,
) -> Fraction:
    """The highest USD price of the owed symbol at which :func:`revalue` keeps
    ``total_due``, ``tokenIn``'s price staying ``token_in_usd`` (a stablecoin paying an
    amount in a priced symbol). Exact; at any higher price the total is raised."""
    largest = largest_principal(
        owed.slippage, total_due=total_due, fees=fees, decimals_in=decimals_in,
        decimals_out=decimals_out,
    )  # fmt: skip
    found: Fraction = Fraction(largest) * Fraction(token_in_usd) / Fraction(owed.amount)
    return found / Fraction(10**decimals_in)


def render_valuation(
    valuation: Mapping[str, Any],
    decimals: int,
    decimals_of: Callable[[str, str], int] | None = None,
) -> dict[str, Any]:
    """The public form of a valuation an event carries (``data.valuation``):
    ``valuation`` holds base units, ``decimals`` are ``tokenIn``'s, ``decimals_of(chain,
    token)`` gives ``tokenOut``'s (``destination``, ``token_out`` keys)."""
    out = dict(valuation)
    for key in ("principal", "total_due", "tolerance", "relayer_bears"):
        if key in out:
            out[key] = format_amount(int(out[key]), decimals)
    if "amount_out" in out:
        places = decimals
        if decimals_of is not None and "destination" in out and "token_out" in out:
            places = decimals_of(out["destination"], out["token_out"])
        out["amount_out"] = format_amount(int(out["amount_out"]), places)
    out.pop("destination", None)
    out.pop("token_out", None)
    return out


def slippage_of_bps(bps: int) -> Decimal:
    """A slippage in basis points as the fraction the record shows (``100`` -> 0.01)."""
    return Decimal(bps) / BPS


def _step(decimals_in: int, decimals_out: int) -> int:
    step: int = 10 ** max(decimals_in - decimals_out, 0)
    return step


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def _decimal(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text == "-0" else text


def _time(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")
