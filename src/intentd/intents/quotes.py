"""Quotes: what a payer sends on a source chain so that a recipient gets ``amount``.

Pure. The same :func:`quote` prices the quote endpoints and intent creation, so a
quote's figures reappear unchanged in the intent created with the same inputs
(``total_amount_in_asset_token = initialAmount + fees_in_asset_token +
app_fee_in_asset_token``).

- A route is (source chain, ``tokenIn``) to (destination chain, ``tokenOut``): the
  same symbol, or stablecoin to stablecoin (1:1); both chains of one network class.
- ``amount`` is denominated in ``amountSymbol``: ``tokenIn``'s symbol (exact), a
  stablecoin symbol or ``USD`` (1:1 for a stablecoin ``tokenIn``, else at its USD
  price), or another priced symbol. Conversions round up (the payer owes at least
  the value asked for).
- Route fees come from the bridge options serving the route (cheapest by default),
  the application fee from ``[fees]``; see :mod:`intentd.domain.fees`.
- The recipient gets exactly what the payer's amount is worth in ``tokenOut``: on a
  route to a token of fewer decimals, an exact amount that ``tokenOut`` cannot carry
  is refused (``amount_rounds_to_zero`` when the recipient would get 0,
  ``amount_too_precise_for_route`` when dust would be left to the relayer), and a
  converted amount is rounded up to a whole unit of ``tokenOut``. An amount whose
  total or amount out does not fit 256 bits is refused (``amount_too_large``).
- Prices (:mod:`intentd.pricing`) are asked for the route's network class. A price the
  source has but does not trust now refuses the quote (``price_unavailable``), so does
  a stablecoin at either end of the route that is off its peg (``token_depegged``); a
  quote carries every price it used (``Quote.prices``) and how long it holds
  (:meth:`Quote.valid_until`).
- An amount converted at a price (in USD, or in another priced symbol than ``tokenIn``)
  is what the recipient is owed (:attr:`Quote.owed`): the intent is revalued when its
  payment is credited, with the slippage of ``tokenIn``'s category
  (``pricing.slippage``; :mod:`intentd.intents.slippage`, docs/pricing.md, *Slippage*).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from intentd.domain.amounts import (
    MAX_BASE_UNITS,
    AmountError,
    format_amount,
    parse_amount,
    rescale,
)
from intentd.domain.fees import FeeBreakdown, FeeSchedule, MissingPrice, charge, convert_units
from intentd.domain.fees import to_usd as units_to_usd
from intentd.domain.valuation import Owed, slippage_of_bps
from intentd.intents.validation import (
    IntentRequestError,
    Token,
    check_address,
    known_chain,
    supported_token,
)
from intentd.pricing import Price, PriceRefused, PriceSource, token_price
from intentd.settings import NATIVE_TOKEN, BridgeOption, ChainConfig, Settings

__all__ = [
    "USD_SYMBOLS",
    "Quote",
    "Route",
    "denomination_price",
    "multi_source",
    "quote",
    "quotes_per_bridge",
    "route",
]

USD_SYMBOLS = frozenset({"USD", "USDC"})
USD_DECIMALS = 6
"""Most decimals a USD amount may have when it is converted at a price."""
OTHER_DECIMALS = 18
"""Decimals of a priced symbol no configured token has."""


@dataclass(frozen=True, slots=True)
class Route:
    """A validated (source chain, ``tokenIn``) to (destination chain, ``tokenOut``)."""

    source: ChainConfig
    destination: ChainConfig
    token_in_address: str
    token_in: Token
    token_out_address: str
    token_out: Token


@dataclass(frozen=True, slots=True)
class Quote:
    """Figures of one route and bridge option; amounts in base units."""

    route: Route
    bridge: BridgeOption
    fees: FeeBreakdown
    amount_out: int
    price_in: Price | None
    """``tokenIn``'s USD price, if it has one."""
    denomination: tuple[str, Price] | None = None
    """``amountSymbol`` and its USD price, when the amount was converted from it."""
    owed: Owed | None = None
    """What the recipient is owed when the amount was converted at a price (USD or
    another symbol than ``tokenIn``'s): the intent is then revalued at its payment."""
    denomination_usd: Decimal = Decimal(1)
    """The owed symbol's USD price the amount was converted at (1 for USD)."""

    @property
    def slippage(self) -> Decimal:
        """The slippage that applies (0 when nothing is revalued)."""
        return Decimal(0) if self.owed is None else self.owed.slippage

    def usd(self, units: int) -> Decimal | None:
        """USD value of ``units`` of ``tokenIn``, None without a price."""
        if self.price_in is None:
            return None
        return units_to_usd(units, self.decimals, self.price_in.usd)

    @property
    def decimals(self) -> int:
        return self.route.token_in.decimals

    @property
    def fees_in_usd(self) -> Decimal:
        return self.usd(self.fees.route_fee) or Decimal(0)

    @property
    def app_fee_in_usd(self) -> Decimal:
        return self.usd(self.fees.app_fee) or Decimal(0)

    @property
    def total_in_usd(self) -> Decimal | None:
        return self.usd(self.fees.total)

    @property
    def prices(self) -> list[tuple[str, Price]]:
        """(symbol, price) of every price the quote used: ``tokenIn``'s, then the
        denomination's if the amount was converted."""
        used = [] if self.price_in is None else [(self.route.token_in.symbol, self.price_in)]
        if self.denomination is not None and self.denomination[0] != self.route.token_in.symbol:
            used.append(self.denomination)
        return used

    def valid_until(self, now: datetime, ttl: int) -> datetime:
        """``now + ttl`` seconds, or sooner if a price used would then be refused
        (unless its feed publishes a new round first)."""
        ends = [now + timedelta(seconds=ttl)]
        ends += [p.good_until for _, p in self.prices if p.good_until is not None]
        return min(ends)

    def asset(self, units: int) -> str:
        return format_amount(units, self.decimals)


def route(
    settings: Settings,
    source_chain: str,
    token_in: str,
    destination_chain: str,
    token_out: str | None,
) -> Route:
    """Validate the chains and tokens of a route; ``token_out`` defaults to ``tokenIn``'s
    symbol on the destination chain."""
    source = known_chain(settings, source_chain, "source_chain")
    destination = known_chain(settings, destination_chain, "destination_chain")
    in_address, in_token = supported_token(source, token_in, "tokenIn")
    if token_out:
        out_address, out_token = supported_token(destination, token_out, "tokenOut")
    else:
        found = destination.token_by_symbol(in_token.symbol)
        if found is None:
            raise IntentRequestError(
                "unknown_token",
                "tokenOut",
                f"{destination.name} has no {in_token.symbol}; name tokenOut explicitly",
            )
        out_address, out_token = found[0].lower(), found[1]
    if out_token.symbol != in_token.symbol and not (
        in_token.category == "stablecoin" and out_token.category == "stablecoin"
    ):
        raise IntentRequestError(
            "unsupported_route",
            "tokenOut",
            f"{in_token.symbol} -> {out_token.symbol}: only the same token, or stablecoin to"
            " stablecoin, can be bridged",
        )
    if source.network != destination.network:
        raise IntentRequestError(
            "unsupported_route",
            "destination_chain",
            f"{source.name} is a {source.network} network and {destination.name} a"
            f" {destination.network} network; a route stays within one class",
        )
    return Route(source, destination, in_address, in_token, out_address, out_token)


def quote(
    settings: Settings,
    prices: PriceSource,
    path: Route,
    amount: str,
    amount_symbol: str | None,
    *,
    default_symbol: str | None = None,
    bridge: str | None = None,
) -> Quote:
    """Price ``amount`` (in ``amount_symbol``, else ``default_symbol``, else ``tokenIn``'s
    symbol) over ``path`` with the named bridge option, or the cheapest one."""
    options = _options(settings, path, bridge)
    price_in = _route_price(settings, prices, path)
    found = _denominate(
        settings, prices, path, amount, symbol=amount_symbol or default_symbol, price_in=price_in
    )
    return min(
        (_priced(settings, path, option, found, price_in) for option in options),
        key=lambda q: q.fees.total,
    )


def quotes_per_bridge(
    settings: Settings,
    prices: PriceSource,
    path: Route,
    amount: str,
    amount_symbol: str | None,
    *,
    default_symbol: str | None = None,
) -> list[Quote]:
    """One quote per bridge option serving ``path``, cheapest first."""
    price_in = _route_price(settings, prices, path)
    denominated = _denominate(
        settings, prices, path, amount, symbol=amount_symbol or default_symbol, price_in=price_in
    )
    found = [
        _priced(settings, path, option, denominated, price_in)
        for option in _options(settings, path, None)
    ]
    return sorted(found, key=lambda q: q.fees.total)


def multi_source(
    settings: Settings,
    prices: PriceSource,
    destination_chain: str,
    token_out: str,
    amount: str,
    *,
    amount_symbol: str | None = None,
    source_allowed: Callable[[ChainConfig], bool] = lambda _: True,
    exclude: Collection[str] = (),
) -> list[Quote]:
    """The cheapest quote of every (source chain, token) that can pay ``token_out``,
    cheapest in USD first (unpriced tokens last). Amounts are USD unless
    ``amount_symbol`` says otherwise.

    Sources are the chains of the destination's network class that ``source_allowed``
    accepts and ``exclude`` does not name. If no candidate can represent the amount,
    the first candidate's error is raised; no candidate at all gives an empty list.
    """
    destination = known_chain(settings, destination_chain, "destinationChain")
    out_address = check_address(token_out, "tokenOut")
    assert out_address is not None
    if destination.token(out_address) is None:
        raise IntentRequestError(
            "unknown_token",
            "tokenOut",
            f"tokenOut {token_out} is not supported on {destination_chain}",
        )
    _check_amount_shape(amount)
    found: list[Quote] = []
    first_error: IntentRequestError | None = None
    for source in settings.chains.values():
        if source.name in exclude or not source_allowed(source):
            continue
        for address in [NATIVE_TOKEN, *(t.address for t in source.tokens)]:
            try:
                path = route(settings, source.name, address, destination.name, out_address)
                found.append(
                    quote(settings, prices, path, amount, amount_symbol, default_symbol="USD")
                )
            except IntentRequestError as exc:
                if exc.code in {"unsupported_route", "unknown_token"}:
                    continue
                first_error = first_error or exc
    if not found and first_error is not None:
        raise first_error
    return sorted(
        found,
        key=lambda q: (q.total_in_usd is None, q.total_in_usd or Decimal(0), q.route.source.name),
    )


def _check_amount_shape(amount: str) -> None:
    try:
        parse_amount(amount, OTHER_DECIMALS)
    except AmountError as exc:
        if exc.code != "amount_too_precise":
            raise IntentRequestError(exc.code, "amount", str(exc)) from None


def _options(settings: Settings, path: Route, bridge: str | None) -> list[BridgeOption]:
    serving = [
        b for b in settings.fees.bridges if b.serves(path.source.name, path.destination.name)
    ]
    if bridge is not None:
        serving = [b for b in serving if b.name == bridge]
        if not serving:
            raise IntentRequestError(
                "unknown_bridge",
                "bridge",
                f"bridge {bridge!r} does not serve {path.source.name} -> {path.destination.name}",
            )
    if not serving:
        raise IntentRequestError(
            "unsupported_route",
            "destination_chain",
            f"no bridge option serves {path.source.name} -> {path.destination.name}",
        )
    return serving


def _route_price(settings: Settings, prices: PriceSource, path: Route) -> Price | None:
    """``tokenIn``'s price; a stablecoin ``tokenOut`` of another symbol must be on its peg
    too (the recipient is paid in it, 1:1)."""
    price_in = _token_price(settings, prices, path, path.token_in, "tokenIn")
    out = path.token_out
    if out.category == "stablecoin" and out.symbol != path.token_in.symbol:
        _token_price(settings, prices, path, out, "tokenOut")
    return price_in


def _token_price(
    settings: Settings, prices: PriceSource, path: Route, token: Token, field: str
) -> Price | None:
    try:
        return token_price(
            token,
            path.source.network,
            prices,
            peg_tolerance_bps=settings.pricing.peg_tolerance_bps,
        )
    except PriceRefused as exc:
        raise IntentRequestError(exc.code, field, exc.detail) from None


@dataclass(frozen=True, slots=True)
class _Denominated:
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


def _denominate(
    settings: Settings,
    prices: PriceSource,
    path: Route,
    amount: str,
    *,
    symbol: str | None,
    price_in: Price | None,
) -> _Denominated:
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
        return _Denominated(units)
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
    return _Denominated(_carried(path, units, amount, exact=False), denomination, owed)


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


def _priced(
    settings: Settings,
    path: Route,
    option: BridgeOption,
    denominated: _Denominated,
    price_in: Price | None,
) -> Quote:
    units = denominated.units
    fees = settings.fees
    try:
        breakdown = charge(
            units,
            path.token_in.decimals,
            None if price_in is None else price_in.usd,
            route=FeeSchedule(option.fixed_usd, option.bps),
            app=FeeSchedule(fees.app_fee_fixed_usd, fees.app_fee_bps),
        )
    except MissingPrice:
        raise IntentRequestError(
            "price_unavailable",
            "tokenIn",
            f"no USD price for {path.token_in.symbol}; its fixed USD fee cannot be charged",
        ) from None
    amount_out = rescale(units, path.token_in.decimals, path.token_out.decimals)
    if breakdown.total > MAX_BASE_UNITS or amount_out > MAX_BASE_UNITS:
        raise IntentRequestError(
            "amount_too_large",
            "amount",
            "the total due or the amount out does not fit in 256 bits",
        )
    owed, denomination_usd = None, Decimal(1)
    if denominated.owed is not None:
        value, symbol, denomination_usd = denominated.owed
        bps = settings.pricing.slippage.default_bps(path.token_in.category)
        owed = Owed(value, symbol, slippage_of_bps(bps))
    return Quote(
        path, option, breakdown, amount_out, price_in, denominated.denomination, owed,
        denomination_usd,
    )  # fmt: skip
