"""Chain names as clients write them: our names and the Chainrails SDK's.

Pure. Our names are the configuration's keys (``BASE``, ``BASE_TESTNET``,
``ARBITRUM_TESTNET``); the Chainrails SDK (``@chainrails/sdk``) sends its internal
names, which are ours for test networks and ours plus ``_MAINNET`` for main networks
(``BASE_MAINNET``). Every input that names a chain goes through :func:`find_chain`, so
either name is accepted everywhere; answers always carry our name (docs/api.md,
"Chainrails SDK compatibility"). ``excludeChains`` may also be one comma-separated
value, as the SDK sends it (:func:`name_set`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from intentd.settings import ChainConfig

__all__ = ["MAIN_SUFFIX", "canonical_name", "find_chain", "name_set"]

MAIN_SUFFIX = "_MAINNET"
"""What the SDK appends to a main network's name."""


def canonical_name(chains: Mapping[str, ChainConfig], name: str) -> str:
    """Our name for ``name``: itself if configured, else without ``_MAINNET`` when that
    names a configured main network, else ``name`` unchanged (so errors quote what was
    sent)."""
    if name in chains or not name.endswith(MAIN_SUFFIX):
        return name
    bare = chains.get(name[: -len(MAIN_SUFFIX)])
    return bare.name if bare is not None and bare.network == "main" else name


def find_chain(chains: Mapping[str, ChainConfig], name: str) -> ChainConfig | None:
    """The configured chain ``name`` means, in our names or the SDK's; None if none."""
    return chains.get(canonical_name(chains, name))


def name_set(chains: Mapping[str, ChainConfig], values: Iterable[str]) -> frozenset[str]:
    """Our names for ``values``, each of which may hold several comma-separated names."""
    return frozenset(
        canonical_name(chains, part.strip())
        for value in values
        for part in value.split(",")
        if part.strip()
    )
