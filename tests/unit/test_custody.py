"""Intent addresses: the BIP-44 path any wallet uses, so funds can be recovered."""

from __future__ import annotations

from eth_account import Account
from eth_account.hdaccount import key_from_seed, seed_from_mnemonic
from hypothesis import given, settings
from hypothesis import strategies as st

from intentd.custody import MAX_INDEX, IntentKeys

MNEMONIC = "test test test test test test test test test test test junk"
KEYS = IntentKeys(MNEMONIC)
SEED = seed_from_mnemonic(MNEMONIC, "")


def test_index_zero_is_the_wallet_default_account() -> None:
    # anvil's (and every wallet's) first account of this public test mnemonic
    assert KEYS.address(0) == "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


@settings(max_examples=25, deadline=None)
@given(st.integers(0, MAX_INDEX))
def test_matches_eth_account_derivation(index: int) -> None:
    reference = Account.from_key(key_from_seed(SEED, f"m/44'/60'/0'/0/{index}"))
    assert KEYS.address(index) == reference.address
    assert KEYS.private_key(index) == bytes(reference.key)


def test_repr_hides_the_secret() -> None:
    assert "test" not in repr(KEYS)
