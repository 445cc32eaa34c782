"""Where USD prices come from: on-chain feeds per token, the ``[pricing]`` section, and
the rules that keep a main network off guessed prices.

- A token (``native`` or one of ``tokens``) may name its Chainlink-style feed(s):
  ``price_feed = { chain, address, heartbeat, min, max }`` or an array of such tables
  (two chains, or two providers, which must then agree). ``chain`` defaults to the
  token's own chain and must be of the token's network class.
- ``[pricing]`` says how often feeds are read and what is trusted (docs/pricing.md).
- :func:`check_price_sources`, run on the whole config: a main network's non-stablecoin
  is never priced by the static ``[prices]`` table (a feed or nothing), and a main
  network with two different stablecoins guards each with a feed or says
  ``assume_peg = true`` for it. Every refusal names the key to change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator, model_validator

from intentd.settings.base import Address, ConfigModel

if TYPE_CHECKING:
    from intentd.settings.chains import ChainConfig
    from intentd.settings.tokens import NativeTokenConfig, TokenConfig

__all__ = [
    "PriceFeedConfig",
    "PricedToken",
    "PricingConfig",
    "SlippageConfig",
    "check_price_sources",
]


class PriceFeedConfig(ConfigModel):
    """One Chainlink-style aggregator (``AggregatorV3Interface``) pricing a token in USD."""

    chain: str | None = None
    """The configured chain the feed is read on; the token's own chain by default."""
    address: Address
    """The feed's proxy address (what ``latestRoundData`` and ``decimals`` are called on)."""
    heartbeat: int = Field(gt=0, le=7 * 86_400)
    """Seconds: an answer updated longer ago than this is refused. The feed's published
    heartbeat plus a margin for a late round (the example adds 10 %)."""
    min: Decimal = Field(gt=0)
    """USD: a lower answer is refused (a broken or manipulated feed, not a price)."""
    max: Decimal = Field(gt=0)
    """USD: a higher answer is refused."""

    @model_validator(mode="after")
    def _bounds(self) -> PriceFeedConfig:
        if not (self.min.is_finite() and self.max.is_finite()) or self.min >= self.max:
            raise ValueError(f"min ({self.min}) must be below max ({self.max})")
        return self


class PricedToken(ConfigModel):
    """What a token says about its USD price (mixed into the token models)."""

    price_feed: list[PriceFeedConfig] = Field(default_factory=list, max_length=4)
    """The token's feed, or several that must agree; none: the static ``[prices]`` table
    (test networks only) or, for a stablecoin, 1 USD."""
    assume_peg: bool = False
    """A stablecoin without a feed on a main network beside another stablecoin: the
    operator accepts it at 1 USD whatever the market says (docs/pricing.md)."""

    @field_validator("price_feed", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


class SlippageConfig(ConfigModel):
    """``[pricing.slippage]``: how far a price may move against the payer between an
    intent's creation and the credit of its payment before the payer must top up, in
    basis points of the amount, by ``tokenIn``'s category (docs/pricing.md, *Slippage*).
    A move within it is borne by the relayer. It applies only to an intent whose amount
    was converted at a price (an amount in USD, or in another priced symbol)."""

    stablecoin: int = Field(default=100, ge=0, le=5_000)
    """A stablecoin paying an amount in a priced symbol (say ETH): that symbol's move."""
    major: int = Field(default=100, ge=0, le=5_000)
    volatile: int = Field(default=300, ge=0, le=5_000)
    max: int = Field(default=1_000, ge=0, le=5_000)
    """The most a create may ask for (``slippage`` in the request); at least every default."""

    @model_validator(mode="after")
    def _within_max(self) -> SlippageConfig:
        for category in ("stablecoin", "major", "volatile"):
            if getattr(self, category) > self.max:
                raise ValueError(
                    f"pricing.slippage.{category} ({getattr(self, category)}) is above"
                    f" pricing.slippage.max ({self.max})"
                )
        return self

    def default_bps(self, category: str) -> int:
        """The default of a ``tokenIn`` of ``category`` (``stablecoin``, ``major``,
        ``volatile``)."""
        found: int = getattr(self, category)
        return found


class PricingConfig(ConfigModel):
    """The ``[pricing]`` section: reading feeds and trusting their answers."""

    refresh_interval: float = Field(default=5.0, gt=0, le=300)
    """Seconds between reads of every feed of a chain (one request per chain)."""
    max_read_age: float = Field(default=30.0, gt=0, le=3600)
    """Seconds after our last successful read of a feed that its answer is still used;
    later (the RPC is down) the price is refused. At least twice ``refresh_interval``."""
    max_block_age: float = Field(default=120.0, gt=0, le=3600)
    """A read is used only if the block it was made at is at most this old by our clock
    (a node that fell behind serves old answers that look fresh to it)."""
    max_deviation_bps: int = Field(default=100, ge=1, le=5_000)
    """Feeds of one symbol (two chains, two providers) must agree within this
    (1/10,000 of the lower answer), else the price is refused."""
    peg_tolerance_bps: int = Field(default=50, ge=1, le=5_000)
    """A stablecoin with a feed is worth 1 USD while its feed is within this of 1;
    outside it the coin is refused (``token_depegged``)."""
    quote_ttl: int = Field(default=60, ge=1, le=3600)
    """Seconds a quote says it is valid (``valid_until``), less if a price it used
    would be refused sooner."""
    slippage: SlippageConfig = Field(default_factory=SlippageConfig)
    """Tolerated price moves between creation and payment (:class:`SlippageConfig`)."""

    @model_validator(mode="after")
    def _read_age(self) -> PricingConfig:
        if self.max_read_age < 2 * self.refresh_interval:
            raise ValueError(
                f"pricing.max_read_age ({self.max_read_age}) must be at least twice"
                f" pricing.refresh_interval ({self.refresh_interval}): one late read would"
                " refuse every price"
            )
        return self


def _tokens(chain: ChainConfig) -> Iterator[tuple[str, TokenConfig | NativeTokenConfig]]:
    """(config key, token) of every token of ``chain``, the native coin first."""
    yield f"chains.{chain.name}.native", chain.native
    for index, token in enumerate(chain.tokens):
        yield f"chains.{chain.name}.tokens.{index}", token


def check_price_sources(chains: Mapping[str, ChainConfig], prices: Mapping[str, Decimal]) -> None:
    """Raise ValueError (naming the key) if the config would price money by guesswork."""
    fed = _feeds_well_formed(chains)
    for chain in chains.values():
        if chain.network != "main":
            continue
        for key, token in _tokens(chain):
            if token.category == "stablecoin" or ("main", token.symbol) in fed:
                continue
            if token.symbol in prices:
                raise ValueError(
                    f"prices.{token.symbol} = {str(prices[token.symbol])!r}: {token.symbol} on"
                    f" {chain.name}, a main network, would be quoted at this fixed price; the"
                    " static table is for test networks only. Give"
                    f" {key}.price_feed (docs/pricing.md) and remove prices.{token.symbol}"
                    " if no test network needs it"
                )
    _stablecoins_guarded(chains, fed)


def _feeds_well_formed(chains: Mapping[str, ChainConfig]) -> set[tuple[str, str]]:
    """(network class, symbol) of every fed symbol, once every feed is checked: on a
    configured chain of the token's class, the same feed always with the same rules,
    ``assume_peg`` only on a stablecoin without a feed."""
    fed: set[tuple[str, str]] = set()
    named: dict[tuple[str, str], tuple[str, PriceFeedConfig]] = {}
    for chain in chains.values():
        for key, token in _tokens(chain):
            for index, feed in enumerate(token.price_feed):
                name = feed.chain or chain.name
                where = f"{key}.price_feed.{index}"
                if name not in chains:
                    raise ValueError(f"{where}.chain = {name!r}: no such chain is configured")
                if chains[name].network != chain.network:
                    raise ValueError(
                        f"{where}.chain = {name!r}: a {chain.network} network's token must be"
                        f" priced by a feed on a {chain.network} network, and {name} is"
                        f" {chains[name].network}"
                    )
                first = named.setdefault((name, feed.address.lower()), (where, feed))
                if _rules(first[1]) != _rules(feed):
                    raise ValueError(
                        f"{where} and {first[0]} name the same feed ({name} {feed.address})"
                        " with different heartbeat or bounds"
                    )
                fed.add((chain.network, token.symbol))
            if token.assume_peg and token.price_feed:
                raise ValueError(
                    f"{key}.assume_peg = true and {key}.price_feed is set: a token with a feed"
                    " is priced by it; drop one of them"
                )
            if token.assume_peg and token.category != "stablecoin":
                raise ValueError(f"{key}.assume_peg = true: {token.symbol} is not a stablecoin")
    return fed


def _rules(feed: PriceFeedConfig) -> tuple[int, Decimal, Decimal]:
    return feed.heartbeat, feed.min, feed.max


def _stablecoins_guarded(chains: Mapping[str, ChainConfig], fed: set[tuple[str, str]]) -> None:
    """On main networks, two different stablecoins can be bridged 1:1; one without a feed
    could be paid in after losing its peg. Each needs a feed or ``assume_peg``."""
    stable: dict[str, list[tuple[str, TokenConfig | NativeTokenConfig]]] = {}
    for chain in chains.values():
        if chain.network == "main":
            for key, token in _tokens(chain):
                if token.category == "stablecoin":
                    stable.setdefault(token.symbol, []).append((key, token))
    if len(stable) < 2:
        return
    for symbol, found in sorted(stable.items()):
        if ("main", symbol) in fed:
            continue
        for key, token in found:
            if not token.assume_peg:
                others = ", ".join(s for s in sorted(stable) if s != symbol)
                raise ValueError(
                    f"{key}.price_feed: {symbol} is a stablecoin on a main network beside"
                    f" {others}, and routes between them pay one for the other 1:1; without a"
                    f" feed a depegged {symbol} would be accepted at 1 USD. Give its"
                    f" price_feed, or set {key}.assume_peg = true to accept that risk"
                )
