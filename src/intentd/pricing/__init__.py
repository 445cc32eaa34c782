"""USD prices of tokens: the port quoting reads, and what a price may be.

Quoting is pure code: it asks a :class:`PriceSource` for the USD price of a symbol on a
network class (``main`` or ``test``) and never waits for I/O. Sources:

- :class:`StaticPrices`: the config's ``[prices]`` table, for **test networks only**
  (it answers nothing for ``main``; the config refuses a main-network token that only
  the table would price, :mod:`intentd.settings.pricing`).
- :class:`~intentd.pricing.cache.FeedPrices`: Chainlink-style feeds read in the
  background (:mod:`~intentd.pricing.refresh`) into a cache, judged against the clock
  when read (:mod:`~intentd.pricing.rounds`, :mod:`~intentd.pricing.consensus`); symbols
  without feeds fall back to the static table.

A source answers None when it has no price for a symbol (no feed, no table entry) and
raises :class:`PriceUnavailable` when it has one it does not trust now (stale, out of
bounds, the sequencer down, feeds that disagree, no reading yet): quoting then refuses
instead of pricing without it. :func:`token_price` adds the stablecoin rule: a
stablecoin is worth exactly 1 USD while its feed (if any) stays within the peg
tolerance, and is refused (:class:`TokenDepegged`) outside it. Amounts are ``Decimal``.
"""

from __future__ import annotations

from intentd.pricing.consensus import token_price
from intentd.pricing.sources import (
    ONE_USD,
    Price,
    PriceRefused,
    PriceSource,
    PriceUnavailable,
    StaticPrices,
    TokenDepegged,
)

__all__ = [
    "ONE_USD",
    "Price",
    "PriceRefused",
    "PriceSource",
    "PriceUnavailable",
    "StaticPrices",
    "TokenDepegged",
    "token_price",
]
