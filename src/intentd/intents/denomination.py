"""An amount in the payer's terms: base units of ``tokenIn`` worth ``amount`` of a symbol.

Pure. ``amount`` is denominated in ``amountSymbol``: ``tokenIn``'s symbol (exact), a
stablecoin symbol or ``USD`` (1:1 for a stablecoin ``tokenIn``, else at its USD price),
or another priced symbol (at both symbols' USD prices).

Guarantees:

- A conversion rounds up (the payer owes at least the value asked for); a converted
  amount worth less than one base unit is refused (``amount_too_small``).
- The recipient gets exactly what the amount is worth in ``tokenOut``: an exact amount
  that ``tokenOut`` cannot carry is refused (``amount_rounds_to_zero``,
  ``amount_too_precise_for_route``), a converted one is rounded up to a whole unit of
  ``tokenOut``.
- An amount converted at a price says what the recipient is owed (amount, symbol as
  stored by :func:`owed_symbol`, the symbol's USD price): the intent is revalued at
  its payment. A price the source refuses refuses the amount (``amountSymbol``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from intentd.domain.amounts import AmountError, parse_amount
from intentd.domain.fees import convert_units
from intentd.intents.routing import Route
from intentd.intents.validation import IntentRequestError, Token
from intentd.pricing import Price, PriceRefused, PriceSource
from intentd.settings import Settings

__all__ = [
    "OTHER_DECIMALS",
    "USD_DECIMALS",
    "USD_SYMBOLS",
    "Denominated",
    "check_amount_shape",
    "denominate",
    "denomination_price",
    "owed_symbol",
]

USD_SYMBOLS = frozenset({"USD", "USDC"})
USD_DECIMALS = 6
"""Most decimals a USD amount may have when it is converted at a price."""
OTHER_DECIMALS = 18
"""Decimals of a priced symbol no configured token has."""


def check_amount_shape(amount: str) -> None:
    try:
        parse_amount(amount, OTHER_DECIMALS)
    except AmountError as exc:
        if exc.code != "amount_too_precise":
            raise IntentRequestError(exc.code, "amount", str(exc)) from None


@dataclass(frozen=True, slots=True)
class Denominated:
    units: int
    """Base units of ``tokenIn``."""
    denomination: tuple[str, Price] | None = None
    """The symbol and its price, when a price source gave it."""
    owed: tuple[Decimal, str, Decimal] | None = None
    """(amount, symbol, the symbol's USD price) when converted at a price."""


def denomination_price(
    settings: Settings, prices: PriceSource, symbol: str, network: str
) -> Price | None:
    """The USD price of one whole ``symbol`` as an amount is converted from it: exactly 1
    (``peg``) for USD and a stablecoin symbol, else the price source's (None: none;
    raises :class:`~intentd.pricing.PriceRefused`)."""
    if symbol.upper() in USD_SYMBOLS or _is_stablecoin_symbol(settings, symbol):
        return Price(Decimal(1), "peg")
    return prices.usd_price(symbol, network)


def owed_symbol(symbol: str) -> str:
    """How an owed symbol is stored: ``USD`` for the USD symbols, else as given."""
    return "USD" if symbol.upper() in USD_SYMBOLS else symbol


def denominate(
    settings: Settings,
    prices: PriceSource,
    path: Route,
    amount: str,
    *,
    symbol: str | None,
    price_in: Price | None,
) -> Denominated:
    """Base units of ``tokenIn`` worth ``amount`` of ``symbol`` (rounded up), the
    symbol's price if the amount was converted at one the price source gave, and what is
    owed if it was converted at all."""
    token_in = path.token_in
    symbol = symbol or token_in.symbol
    stable_alias = token_in.category == "stablecoin" and (
        symbol.upper() in USD_SYMBOLS or _is_stablecoin_symbol(settings, symbol)
    )
    if symbol == token_in.symbol or stable_alias:
        units = _carried(path, _parse(amount, token_in.decimals), amount, exact=True)
        return Denominated(units)
    quoted = not (symbol.upper() in USD_SYMBOLS or _is_stablecoin_symbol(settings, symbol))
    decimals = USD_DECIMALS if symbol.upper() in USD_SYMBOLS else _decimals_of(settings, symbol)
    try:
        symbol_price = denomination_price(settings, prices, symbol, path.source.network)
    except PriceRefused as exc:
        raise IntentRequestError(exc.code, "amountSymbol", exc.detail) from None
    if symbol_price is None or price_in is None:
        raise IntentRequestError(
            "unsupported_amount_symbol",
            "amountSymbol",
            f"amountSymbol {symbol!r} needs USD prices of {symbol} and {token_in.symbol};"
            f" use {token_in.symbol!r} or a priced symbol",
        )
    parsed = _parse(amount, decimals)
    value = Fraction(parsed, 10**decimals)
    units = convert_units(value, symbol_price.usd, price_in.usd, token_in.decimals, round_up=True)
    if units == 0:
        raise IntentRequestError(
            "amount_too_small", "amount", f"amount {amount} is worth less than 1 base unit"
        )
    denomination = (symbol, symbol_price) if quoted else None  # USD is 1 by definition
    owed = (Decimal(parsed).scaleb(-decimals), owed_symbol(symbol), symbol_price.usd)
    return Denominated(_carried(path, units, amount, exact=False), denomination, owed)


def _carried(path: Route, units: int, amount: str, *, exact: bool) -> int:
    """``units`` of ``tokenIn`` made a whole number of ``tokenOut`` units: an exact
    amount that ``tokenOut`` cannot carry is refused, a converted one rounded up."""
    step: int = 10 ** max(path.token_in.decimals - path.token_out.decimals, 0)
    remainder = units % step
    if remainder == 0:
        return units
    out = path.token_out
    if exact and units < step:
        raise IntentRequestError(
            "amount_rounds_to_zero",
            "amount",
            f"amount {amount} is less than one base unit of {out.symbol} ({out.decimals}"
            " decimals): the recipient would get nothing",
        )
    if exact:
        raise IntentRequestError(
            "amount_too_precise_for_route",
            "amount",
            f"amount {amount} has more precision than {out.symbol} ({out.decimals} decimals)"
            " can carry; the rest would be lost",
        )
    return units + step - remainder


def _parse(amount: str, decimals: int) -> int:
    try:
        return parse_amount(amount, decimals)
    except AmountError as exc:
        raise IntentRequestError(exc.code, "amount", str(exc)) from None


def _is_stablecoin_symbol(settings: Settings, symbol: str) -> bool:
    for chain in settings.chains.values():
        tokens: list[Token] = [chain.native, *chain.tokens]
        if any(t.symbol == symbol and t.category == "stablecoin" for t in tokens):
            return True
    return False


def _decimals_of(settings: Settings, symbol: str) -> int:
    for chain in settings.chains.values():
        found = chain.token_by_symbol(symbol)
        if found is not None:
            return found[1].decimals
    return OTHER_DECIMALS
