"""What the lifecycle's handlers need of the configuration, and nothing else.

Built once per process from :class:`~intentd.settings.Settings`
(:meth:`ChainBook.of_settings`, by the composition root) and given to every role that
needs it; frozen, so a handler cannot reach the rest of the settings. Token addresses are kept
lowercase; lookups take any case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from intentd.contract.mode import Mode, mode_of
from intentd.messages import events_topic
from intentd.settings import NATIVE_TOKEN, Settings

__all__ = ["BookedChain", "BookedToken", "ChainBook"]


@dataclass(frozen=True, slots=True)
class BookedToken:
    decimals: int
    min_sweep: int
    """Base units below which a refund or a sweep is not made (``min_sweep``)."""


@dataclass(frozen=True, slots=True)
class BookedChain:
    chain_id: int
    relayer: str
    """Lowercase; "" if the chain has none."""
    fee_account: str
    """Lowercase; "" if fees are not swept."""
    tokens: Mapping[str, BookedToken] = field(default_factory=dict)
    """Supported tokens by lowercase address, the native coin included."""
    network: str = "test"
    """The chain's network class (``main`` or a test network): decides an event's mode."""


@dataclass(frozen=True, slots=True)
class ChainBook:
    events_topic: str
    """Where the intents' public events go (through the outbox)."""
    chains: Mapping[str, BookedChain]

    @classmethod
    def of_settings(cls, settings: Settings) -> ChainBook:
        chains = {}
        for name, chain in settings.chains.items():
            tokens = {
                token.address.lower(): BookedToken(token.decimals, token.min_sweep_units)
                for token in chain.tokens
            }
            native = chain.native
            tokens[NATIVE_TOKEN.lower()] = BookedToken(native.decimals, native.min_sweep_units)
            chains[name] = BookedChain(
                chain_id=chain.chain_id,
                relayer=chain.relayer.lower(),
                fee_account=chain.fee_account.lower(),
                tokens=tokens,
                network=chain.network,
            )
        return cls(events_topic=events_topic(settings.kafka.topic_prefix), chains=chains)

    def token(self, chain: str, address: str) -> BookedToken | None:
        """The supported token at ``address`` on ``chain``, or None."""
        found = self.chains.get(chain)
        return found.tokens.get(address.lower()) if found is not None else None

    def relayer(self, chain: str) -> str:
        """The relayer of ``chain`` (KeyError if the chain is not configured)."""
        return self.chains[chain].relayer

    def fee_account(self, chain: str) -> str:
        return self.chains[chain].fee_account

    def mode(self, source_chain: str) -> Mode:
        """The mode (``live``/``test``) of an intent whose source chain is ``source_chain``."""
        found = self.chains.get(source_chain)
        return mode_of(found.network if found is not None else "test")
