"""Quotes: what a payer sends on a source chain so that a recipient gets ``amount``.

Pure. The same :func:`quote` prices the quote endpoints and intent creation, so a
quote's figures reappear unchanged in the intent created with the same inputs
(``total_amount_in_asset_token = initialAmount + fees_in_asset_token +
app_fee_in_asset_token``).

- A route is (source chain, ``tokenIn``) to (destination chain, ``tokenOut``): the
  same symbol, or stablecoin to stablecoin (1:1); both chains of one network class
  (:mod:`intentd.intents.routing`).
- ``amount`` is denominated in ``amountSymbol``: ``tokenIn``'s symbol (exact), a
  stablecoin symbol or ``USD`` (1:1 for a stablecoin ``tokenIn``, else at its USD
  price), or another priced symbol. Conversions round up (the payer owes at least
  the value asked for; :mod:`intentd.intents.denomination`).
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

from intentd.domain.amounts import MAX_BASE_UNITS, format_amount, rescale
from intentd.domain.fees import FeeBreakdown, FeeSchedule, MissingPrice, charge
from intentd.domain.fees import to_usd as units_to_usd
from intentd.domain.valuation import Owed, slippage_of_bps
from intentd.intents.denomination import Denominated, check_amount_shape, denominate
from intentd.intents.routing import Route, route
from intentd.intents.validation import IntentRequestError, Token, check_address, known_chain
from intentd.pricing import Price, PriceRefused, PriceSource, token_price
from intentd.settings import NATIVE_TOKEN, BridgeOption, ChainConfig, Settings

__all__ = ["Quote", "multi_source", "quote", "quotes_per_bridge"]


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
    found = denominate(
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
    denominated = denominate(
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
    check_amount_shape(amount)
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


def _priced(
    settings: Settings,
    path: Route,
    option: BridgeOption,
    denominated: Denominated,
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
