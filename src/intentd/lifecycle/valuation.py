"""The prices a credit of a revalued intent is valued at, from the role's price source.

An intent whose amount was converted at a price (``IntentRow.owed``) is revalued when a
payment of it is credited (:mod:`intentd.domain.valuation`); :class:`Valuer` gives the
:class:`~intentd.domain.valuation.Rate` of that moment: ``tokenIn``'s USD price (a
stablecoin's is its peg of 1, refused when its feed is off the peg) and the owed
symbol's (1 for USD and stablecoins), by the same rules as quoting
(:func:`intentd.pricing.token_price`, :func:`intentd.intents.denomination.denomination_price`).

The price source is the role's (:class:`~intentd.pricing.cache.FeedPrices`, refreshed in
the background by ``adapters.evm.price_feeds.running_prices``): reading it is a cache
lookup, never an RPC per message. A price that cannot be trusted now (stale, out of
bounds, the sequencer down, feeds that disagree, not read yet, none configured) gives
no rate: the payment is credited and its intent stays PENDING, awaiting a price
(``Intent.awaiting_price``), until the lifecycle values it (:mod:`intentd.lifecycle.awaiting`)
or it expires and is refunded. Never a covered total decided on a missing price.
"""

from __future__ import annotations

import structlog

from intentd.contract.record import IntentRow
from intentd.domain.valuation import Rate
from intentd.intents.denomination import denomination_price
from intentd.pricing import PriceRefused, PriceSource, token_price
from intentd.settings import NATIVE_TOKEN, NativeTokenConfig, Settings, TokenConfig

__all__ = ["Valuer"]

log = structlog.get_logger()
_REMEMBERED = 10_000


class Valuer:
    """``valuer.rate(row)``: the prices to value a credit of ``row`` at now, or None."""

    def __init__(self, settings: Settings, prices: PriceSource) -> None:
        self._settings = settings
        self._prices = prices
        self._peg = settings.pricing.peg_tolerance_bps
        self._tokens: dict[tuple[str, str], TokenConfig | NativeTokenConfig] = {}
        for name, chain in settings.chains.items():
            self._tokens[name, NATIVE_TOKEN.lower()] = chain.native
            for token in chain.tokens:
                self._tokens[name, token.address.lower()] = token
        self._refused: set[int] = set()
        """Intents whose refusal was logged (once per intent until it is valued)."""

    def rate(self, row: IntentRow) -> Rate | None:
        """The rate of ``row``'s owed amount now; None if it is not revalued (no owed
        amount) or a price it needs cannot be trusted now (logged once per intent)."""
        owed = row.owed
        token = self._tokens.get((row.source_chain, row.token_in.lower()))
        chain = self._settings.chains.get(row.source_chain)
        if owed is None or token is None or chain is None:
            return None
        try:
            price_in = token_price(token, chain.network, self._prices, peg_tolerance_bps=self._peg)
            price_of = denomination_price(self._settings, self._prices, owed.symbol, chain.network)
        except PriceRefused as exc:
            self._refuse(row, exc.detail)
            return None
        if price_in is None or price_of is None:
            missing = token.symbol if price_in is None else owed.symbol
            self._refuse(row, f"no USD price of {missing} is configured")
            return None
        self._refused.discard(row.id)
        used = [price_in.used(token.symbol)]
        if price_of.source != "peg":
            used.append(price_of.used(owed.symbol))
        return Rate(price_in.usd, price_of.usd, tuple(used))

    def _refuse(self, row: IntentRow, reason: str) -> None:
        if len(self._refused) > _REMEMBERED:  # intents that ended while refused
            self._refused.clear()
        if row.id not in self._refused:
            self._refused.add(row.id)
            log.warning(
                "no trusted price to value a payment; the intent awaits one",
                intent_id=row.id,
                reason=reason,
            )
