"""``intents.chain_names``: the Chainrails SDK's names mean our chains, and nothing else."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from intentd.intents.chain_names import canonical_name, find_chain, name_set
from intentd.settings import ChainConfig

CHAINS = cast(
    dict[str, ChainConfig],
    {
        name: cast(Any, SimpleNamespace(name=name, network=network))
        for name, network in (
            ("BASE", "main"),
            ("BASE_TESTNET", "test"),
            ("ARBITRUM_TESTNET", "test"),
        )
    },
)


@pytest.mark.parametrize(
    ("given", "ours"),
    [
        ("BASE", "BASE"),
        ("BASE_MAINNET", "BASE"),  # the SDK's name of a main network
        ("BASE_TESTNET", "BASE_TESTNET"),  # the SDK's test names are ours
        ("ARBITRUM_TESTNET", "ARBITRUM_TESTNET"),
        ("ARBITRUM_MAINNET", "ARBITRUM_MAINNET"),  # not configured: left as sent
        ("BASE_TESTNET_MAINNET", "BASE_TESTNET_MAINNET"),  # a test network has no such name
        ("base_mainnet", "base_mainnet"),  # names are case-sensitive, as everywhere
        ("_MAINNET", "_MAINNET"),
    ],
)
def test_canonical_names(given: str, ours: str) -> None:
    assert canonical_name(CHAINS, given) == ours


def test_find_chain_knows_both_names_and_no_other() -> None:
    assert find_chain(CHAINS, "BASE_MAINNET") is find_chain(CHAINS, "BASE") is CHAINS["BASE"]
    assert find_chain(CHAINS, "MOON_MAINNET") is None
    assert find_chain(CHAINS, "MAINNET") is None


def test_name_sets_split_commas_and_map_names() -> None:
    assert name_set(CHAINS, ["BASE_MAINNET, STARKNET_TESTNET", "ARBITRUM_TESTNET", ""]) == {
        "BASE",
        "STARKNET_TESTNET",
        "ARBITRUM_TESTNET",
    }
    assert name_set(CHAINS, [",,"]) == frozenset()
