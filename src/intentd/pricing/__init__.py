"""USD prices of tokens: a small port and the config-backed implementation.

Stablecoins (category ``stablecoin``) are worth 1 USD by definition and never asked
of a price source. Other tokens are priced by a :class:`PriceSource`. The port is
synchronous on purpose: quoting is pure code; a live source (an exchange feed)
refreshes its own cache in the background and answers reads from it, returning
None for a price it no longer trusts (too old), which quotes report as
``price_unavailable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Protocol

from intentd.settings import NativeTokenConfig, TokenConfig

__all__ = ["PriceSource", "StaticPrices", "token_price"]

ONE_USD = Decimal(1)


class PriceSource(Protocol):
    def usd_price(self, symbol: str) -> Decimal | None:
        """USD value of one whole ``symbol`` (case as configured), or None if unknown."""
        ...


class StaticPrices:
    """Prices from the ``[prices]`` table of the config (``ETH = "3000"``)."""

    def __init__(self, prices: Mapping[str, Decimal]) -> None:
        self._prices = dict(prices)

    def usd_price(self, symbol: str) -> Decimal | None:
        return self._prices.get(symbol)


def token_price(token: TokenConfig | NativeTokenConfig, prices: PriceSource) -> Decimal | None:
    """USD price of a configured token: 1 for stablecoins, else the price source's."""
    if token.category == "stablecoin":
        return ONE_USD
    return prices.usd_price(token.symbol)
