"""Intent addresses: the BIP-44 path any wallet uses, so funds can be recovered."""

from __future__ import annotations

import pytest
from eth_account import Account
from eth_account.hdaccount import key_from_seed, seed_from_mnemonic
from eth_account.hdaccount.mnemonic import Mnemonic
from eth_account.types import Language
from hypothesis import given, settings
from hypothesis import strategies as st

from intentd.custody import MAX_INDEX, IntentKeys
from intentd.extended_keys import ExtendedPublicKey, IntentAddresses

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


# BIP-32 test vector 1 (bitcoin/bips bip-0032.mediawiki): m/0H/1/2H/2 and its
# non-hardened child 1000000000, both public; published data, not secrets.
VECTOR_M_0H_1_2H_2 = (
    "xpub6FHa3pjLCk84BayeJxFW2SP4XRrFd1JYnxeLeU8EqN3vDfZmbqBqaGJAyiLjTAwm6ZLRQUMv1ZACTj37"
    "sR62cfN7fe5JnJ7dh8zL4fiyLHV"
)
VECTOR_CHILD_1000000000 = (
    "xpub6H1LXWLaKsWFhvm6RVpEL9P4KfRZSW7abD2ttkWP3SSQvnyA8FSVqNTEcYFgJS2UaFcxupHiYkro49S8"
    "yGasTvXEYBVPamhGW6cFJodrTHy"
)


def test_public_derivation_and_serialization_follow_the_bip32_vectors() -> None:
    parent = ExtendedPublicKey.parse(VECTOR_M_0H_1_2H_2)
    assert (parent.depth, parent.child_number) == (4, 2)
    assert parent.serialize() == VECTOR_M_0H_1_2H_2
    assert parent.child(1_000_000_000).serialize() == VECTOR_CHILD_1000000000


def test_the_xpub_is_the_standard_serialization_a_wallet_shows() -> None:
    text = KEYS.xpub.serialize()
    assert text.startswith("xpub") and ExtendedPublicKey.parse(text) == KEYS.xpub
    assert (KEYS.xpub.depth, KEYS.xpub.child_number) == (4, 0)
    assert IntentAddresses(ExtendedPublicKey.parse(text)).address(0) == KEYS.address(0)


ADDRESSES = IntentAddresses(KEYS.xpub)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, MAX_INDEX))
def test_public_derivation_equals_private_derivation(index: int) -> None:
    assert ADDRESSES.address(index) == KEYS.address(index)


@settings(max_examples=10, deadline=None)
@given(
    st.binary(min_size=16, max_size=16).map(Mnemonic(Language.ENGLISH).to_mnemonic),
    st.integers(0, MAX_INDEX),
)
def test_public_derivation_equals_private_derivation_for_any_seed(
    mnemonic: str, index: int
) -> None:
    keys = IntentKeys(mnemonic)
    addresses = IntentAddresses(ExtendedPublicKey.parse(keys.xpub.serialize()))
    assert addresses.address(index) == keys.address(index)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (VECTOR_M_0H_1_2H_2, "depth 4, child 2"),
        (VECTOR_CHILD_1000000000, "depth 5"),
        (KEYS.xpub.serialize()[:-1] + "z", "checksum"),
        (KEYS.xpub.serialize().replace("x", "0", 1), "not a Base58 character"),
        (
            "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5"
            "kejMRNNU3TGtRBeJgk33yuGBxrMPHi",
            "PRIVATE",
        ),
    ],
)
def test_a_key_intentd_would_not_derive_from_is_refused(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        IntentAddresses(ExtendedPublicKey.parse(text))
