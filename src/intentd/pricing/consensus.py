"""Several answers for one symbol, and the stablecoin's peg: pure rules.

- :func:`agree`: feeds of one symbol (two chains, two providers) must be within
  ``max_deviation_bps`` of each other, measured on the lowest answer
  (``(highest - lowest) * 10,000 <= max_deviation_bps * lowest``, in exact
  fractions); the
  lowest is then the price used (a fixed USD fee converted at it is never
  under-charged).
- :func:`check_peg`: a stablecoin's observed price must be within
  ``peg_tolerance_bps`` of 1 USD (``|price - 1| * 10,000 <= tolerance``), else
  :class:`~intentd.pricing.sources.TokenDepegged`.
- :func:`token_price`: a configured token's price, with that rule for stablecoins.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

from intentd.pricing.rounds import Refusal
from intentd.pricing.sources import ONE_USD, Price, PriceSource, TokenDepegged
from intentd.settings import NativeTokenConfig, TokenConfig

__all__ = ["BPS", "agree", "check_peg", "token_price"]

BPS = 10_000


def agree(answers: Sequence[tuple[str, Decimal]], max_deviation_bps: int) -> Refusal | None:
    """None if every answer (``(feed, usd)``, all positive) is within ``max_deviation_bps``
    of the lowest; else a refusal naming the two furthest apart."""
    if len(answers) < 2:
        return None
    low = min(answers, key=lambda a: a[1])
    high = max(answers, key=lambda a: a[1])
    gap = (Fraction(high[1]) - Fraction(low[1])) * BPS
    if gap <= max_deviation_bps * Fraction(low[1]):
        return None
    spread = round(gap / Fraction(low[1]))
    return Refusal(
        f"feeds disagree: {high[0]} says {high[1]} USD, {low[0]} says {low[1]} USD,"
        f" {spread} bps apart (pricing.max_deviation_bps {max_deviation_bps})"
    )


def check_peg(symbol: str, price: Price, tolerance_bps: int) -> None:
    """Raise :class:`TokenDepegged` if ``price`` is further than ``tolerance_bps`` from 1 USD."""
    if abs(Fraction(price.usd) - 1) * BPS <= tolerance_bps:
        return
    where = f" ({price.feed}, round {price.round_id})" if price.feed else ""
    raise TokenDepegged(
        symbol,
        f"{symbol} is worth {price.usd} USD by its feed{where}, more than"
        f" {tolerance_bps} bps (pricing.peg_tolerance_bps) from its peg of 1 USD",
    )


def token_price(
    token: TokenConfig | NativeTokenConfig,
    network: str,
    prices: PriceSource,
    *,
    peg_tolerance_bps: int,
) -> Price | None:
    """USD price of a configured token on ``network``: the source's; a stablecoin is
    exactly 1 USD, checked against its feed when it has one (:func:`check_peg`)."""
    found = prices.usd_price(token.symbol, network)
    if token.category != "stablecoin":
        return found
    if found is None:
        return Price(ONE_USD, "peg")
    check_peg(token.symbol, found, peg_tolerance_bps)
    return Price(
        ONE_USD,
        found.source,
        found.feed,
        found.round_id,
        found.updated_at,
        found.good_until,
        observed=found.usd,
    )
