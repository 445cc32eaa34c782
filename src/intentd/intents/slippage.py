"""Slippage at creation: what a quote tells the payer, and a create's own ``slippage``.

An intent whose amount was converted at a price (:attr:`Quote.owed
<intentd.intents.quotes.Quote.owed>`) is revalued when its payment is credited
(:mod:`intentd.domain.valuation`). Its slippage is ``pricing.slippage`` for
``tokenIn``'s category unless the create asks for another (:func:`requested_slippage`):
a decimal fraction string (``"0.005"`` is 0.5 %) of at most 4 decimals (a basis point),
from 0 to ``pricing.slippage.max``. The refusals (422, ``field`` ``slippage``):
``slippage_malformed``, ``slippage_negative``, ``slippage_too_precise``,
``slippage_too_large``, and ``slippage_not_applicable`` for an intent that is not
revalued (its amount is in ``tokenIn``'s own units, or both sides are worth 1 USD).

:func:`slippage_limit` is what a quote says that means for the payer: the price beyond
which a payment of exactly the quoted total no longer covers the intent when it is
credited (the total is then raised, and the payer tops up or is refunded at expiry).
Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from intentd.domain.amounts import AmountError, parse_amount
from intentd.domain.valuation import BPS, Owed, highest_price, lowest_price
from intentd.intents.quotes import Quote
from intentd.intents.validation import IntentRequestError
from intentd.settings import Settings

__all__ = ["SlippageLimit", "requested_slippage", "slippage_limit"]

_CODES = {
    "amount_negative": "slippage_negative",
    "amount_too_precise": "slippage_too_precise",
    "amount_too_large": "slippage_too_large",
}


@dataclass(frozen=True, slots=True)
class SlippageLimit:
    """A payment of exactly the quoted total covers the intent unless, when it is
    credited, ``symbol``'s USD price is beyond ``usd`` (below it if ``below``, else
    above it)."""

    symbol: str
    usd: Decimal
    """Rounded to 10^-8 towards the side where the total still covers."""
    below: bool


def requested_slippage(settings: Settings, quote: Quote, text: str | None) -> Owed | None:
    """What the intent of ``quote`` owes, with the create's ``slippage`` if it gave one."""
    if text is None:
        return quote.owed
    try:
        bps = parse_amount(text, 4, allow_zero=True)
    except AmountError as exc:
        raise IntentRequestError(
            _CODES.get(exc.code, "slippage_malformed"),
            "slippage",
            f"slippage {text!r}: a fraction such as '0.005' (0.5 %), at most 4 decimals",
        ) from None
    most = settings.pricing.slippage.max
    if bps > most:
        raise IntentRequestError(
            "slippage_too_large",
            "slippage",
            f"slippage {text!r} is above the most allowed, {Decimal(most) / BPS}",
        )
    if quote.owed is None:
        raise IntentRequestError(
            "slippage_not_applicable",
            "slippage",
            f"the amount is in {quote.route.token_in.symbol}'s own units (or worth 1 USD on"
            " both sides): no price move can change what is owed, so no slippage applies",
        )
    return replace(quote.owed, slippage=Decimal(bps) / BPS)


def slippage_limit(quote: Quote, owed: Owed | None = None) -> SlippageLimit | None:
    """Where a payment of exactly ``quote``'s total stops covering its intent: ``tokenIn``'s
    lowest price, or for a stablecoin ``tokenIn`` the owed symbol's highest (the other
    price staying where it was); None when nothing is revalued or ``tokenIn`` has no
    price. ``owed``: with a create's own slippage (default the quote's)."""
    owed = owed or quote.owed
    price_in = quote.price_in
    if owed is None or price_in is None:
        return None
    fees = quote.fees
    figures = {
        "total_due": fees.total,
        "fees": fees.route_fee + fees.app_fee,
        "decimals_in": quote.decimals,
        "decimals_out": quote.route.token_out.decimals,
    }
    if quote.route.token_in.category != "stablecoin":
        low = lowest_price(owed, quote.denomination_usd, **figures)
        up = -((-low.numerator * 10**8) // low.denominator)
        return SlippageLimit(quote.route.token_in.symbol, Decimal(up).scaleb(-8), below=True)
    high = highest_price(owed, price_in.usd, **figures)
    down = high.numerator * 10**8 // high.denominator
    return SlippageLimit(owed.symbol, Decimal(down).scaleb(-8), below=False)
