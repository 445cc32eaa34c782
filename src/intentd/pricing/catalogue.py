"""Which feeds price which symbol, and which chains must be read: from the config, pure.

A symbol is priced per network class: ``ETH`` on main networks by every ``price_feed``
that a main network's ETH names (Base's and Arbitrum's, say), which must then agree.
The same feed named by two tokens (the same chain and address) is one feed, read once.
A chain is read if a feed lives on it; its sequencer uptime feed, if configured, is
read with them and gates every price read there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from intentd.pricing.rounds import FeedRule
from intentd.settings import Settings

__all__ = ["Catalogue", "ChainFeeds", "FeedSpec"]


@dataclass(frozen=True, slots=True)
class FeedSpec:
    """One configured feed, for one symbol on one network class."""

    chain: str
    address: str
    """Checksummed."""
    rule: FeedRule
    symbol: str
    network: str

    @property
    def id(self) -> str:
        """``CHAIN:0xaddress``: how logs, metrics and quotes name the feed."""
        return f"{self.chain}:{self.address}"

    @property
    def key(self) -> str:
        """The address as :class:`~intentd.pricing.rounds.ChainReading` keys it."""
        return self.address.lower()


@dataclass(frozen=True, slots=True)
class ChainFeeds:
    """What one read of a chain asks for."""

    feeds: tuple[str, ...]
    """Checksummed addresses, each once."""
    sequencer: str | None
    sequencer_grace: int


@dataclass(frozen=True, slots=True)
class Catalogue:
    by_symbol: Mapping[tuple[str, str], tuple[FeedSpec, ...]]
    """(network class, symbol) -> its feeds."""
    stablecoins: frozenset[tuple[str, str]]
    """(network class, symbol) of the fed symbols that a configured stablecoin has."""
    chains: Mapping[str, ChainFeeds]

    @classmethod
    def of(cls, settings: Settings) -> Catalogue:
        by_symbol: dict[tuple[str, str], dict[tuple[str, str], FeedSpec]] = {}
        stablecoins: set[tuple[str, str]] = set()
        for chain in settings.chains.values():
            for token in (chain.native, *chain.tokens):
                group = (chain.network, token.symbol)
                for feed in token.price_feed:
                    name = feed.chain or chain.name
                    spec = FeedSpec(
                        name,
                        feed.address,
                        FeedRule(feed.heartbeat, Decimal(feed.min), Decimal(feed.max)),
                        token.symbol,
                        chain.network,
                    )
                    by_symbol.setdefault(group, {}).setdefault((name, spec.key), spec)
                    if token.category == "stablecoin":
                        stablecoins.add(group)
        read: dict[str, list[str]] = {}
        for specs in by_symbol.values():
            for spec in specs.values():
                if spec.address not in read.setdefault(spec.chain, []):
                    read[spec.chain].append(spec.address)
        chains = {
            name: ChainFeeds(
                tuple(addresses),
                settings.chains[name].sequencer_uptime_feed or None,
                settings.chains[name].sequencer_grace,
            )
            for name, addresses in sorted(read.items())
        }
        return cls(
            {group: tuple(specs.values()) for group, specs in by_symbol.items()},
            frozenset(stablecoins),
            chains,
        )
