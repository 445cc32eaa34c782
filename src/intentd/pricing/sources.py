"""The price port and its simplest source: :class:`Price`, the refusals,
:class:`PriceSource` and :class:`StaticPrices` (see the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from intentd.domain.valuation import PriceUsed

__all__ = [
    "ONE_USD",
    "Price",
    "PriceRefused",
    "PriceSource",
    "PriceUnavailable",
    "StaticPrices",
    "TokenDepegged",
]

ONE_USD = Decimal(1)


@dataclass(frozen=True, slots=True)
class Price:
    """The USD value of one whole token, and where it came from."""

    usd: Decimal
    source: str
    """``chainlink`` (a feed), ``static`` (the config's table) or ``peg`` (a stablecoin
    without a feed, 1 USD by definition)."""
    feed: str | None = None
    """``CHAIN:0xaddress`` of the feed whose round gave ``usd`` (the lowest of agreeing feeds)."""
    round_id: int | None = None
    updated_at: datetime | None = None
    """When the feed's round was updated (the chain's clock)."""
    good_until: datetime | None = None
    """After this the price is refused unless the feed publishes a new round."""
    observed: Decimal | None = None
    """A stablecoin's feed answer, when ``usd`` is its peg of 1."""

    def used(self, symbol: str) -> PriceUsed:
        """The price as an intent records it (its creation, a credit's valuation)."""
        return PriceUsed(
            symbol, self.usd, self.source, self.feed, self.round_id, self.updated_at,
            self.observed,
        )  # fmt: skip


class PriceRefused(Exception):
    """A price exists but may not be used now; ``code`` is the API's problem code."""

    code = "price_unavailable"

    def __init__(self, symbol: str, detail: str) -> None:
        super().__init__(detail)
        self.symbol = symbol
        self.detail = detail


class PriceUnavailable(PriceRefused):
    """No trustworthy price now (stale, out of bounds, sequencer down, feeds disagree)."""


class TokenDepegged(PriceRefused):
    """A stablecoin's feed is outside the peg tolerance: the coin is not worth 1 USD."""

    code = "token_depegged"


class PriceSource(Protocol):
    def usd_price(self, symbol: str, network: str) -> Price | None:
        """The USD price of one whole ``symbol`` (case as configured) on ``network``
        (``main`` or ``test``); None if none is configured. Raises :class:`PriceRefused`
        for a configured price that cannot be trusted now. Never does I/O."""
        ...


class StaticPrices:
    """Prices from the ``[prices]`` table of the config (``ETH = "3000"``), for test
    networks only: on a main network it knows no price."""

    def __init__(self, prices: Mapping[str, Decimal]) -> None:
        self._prices = {symbol: Price(usd, "static") for symbol, usd in prices.items()}

    def usd_price(self, symbol: str, network: str) -> Price | None:
        return self._prices.get(symbol) if network == "test" else None
