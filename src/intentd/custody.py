"""Intent keys from the HD seed (BIP-32 / BIP-44, Ethereum path): the executor's side.

The key of intent index ``i`` is the account at ``m/44'/60'/0'/0/i`` of the
mnemonic (the path wallets use, so the funds can be recovered with any wallet).
The parent node ``m/44'/60'/0'/0`` and its public key are derived once; each index
then costs one HMAC-SHA512 and one curve multiplication (for the address).

Only signing roles hold an :class:`IntentKeys`. Roles that only need addresses use
``extended_keys.IntentAddresses`` with :attr:`IntentKeys.xpub`, the extended public
key of the same parent node: it derives the same addresses and cannot spend.

The mnemonic and the keys never leave this module in logs or errors; the
``repr`` of :class:`IntentKeys` shows nothing secret.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

import coincurve
from eth_account.hdaccount import seed_from_mnemonic
from eth_utils import keccak, to_checksum_address

from intentd.extended_keys import ExtendedPublicKey, key_fingerprint

_CURVE_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_HARDENED = 0x8000_0000
_PARENT_PATH = (44 + _HARDENED, 60 + _HARDENED, 0 + _HARDENED, 0)
MAX_INDEX = _HARDENED - 1


@dataclass(frozen=True, slots=True, repr=False)
class _Node:
    key: bytes
    chain_code: bytes


def _master(seed: bytes) -> _Node:
    digest = hmac.new(b"Bitcoin seed", seed, hashlib.sha512).digest()
    return _Node(digest[:32], digest[32:])


def _child(node: _Node, index: int, public: bytes | None = None) -> _Node:
    """BIP-32 private child derivation; ``public`` is the node's compressed public key
    when the caller has it (non-hardened children need it)."""
    if index & _HARDENED:
        data = b"\x00" + node.key + index.to_bytes(4, "big")
    else:
        if public is None:
            public = coincurve.PrivateKey(node.key).public_key.format(compressed=True)
        data = public + index.to_bytes(4, "big")
    digest = hmac.new(node.chain_code, data, hashlib.sha512).digest()
    tweak = int.from_bytes(digest[:32], "big")
    key = (tweak + int.from_bytes(node.key, "big")) % _CURVE_ORDER
    if tweak >= _CURVE_ORDER or key == 0:  # probability ~2**-127; BIP-32 says skip the index
        raise ValueError(f"BIP-32 index {index & MAX_INDEX} is invalid for this seed")
    return _Node(key.to_bytes(32, "big"), digest[32:])


def _public(node: _Node) -> bytes:
    return coincurve.PrivateKey(node.key).public_key.format(compressed=True)


def address_of_key(private_key: bytes) -> str:
    """EIP-55 address of a secp256k1 private key."""
    public = coincurve.PrivateKey(private_key).public_key.format(compressed=False)
    return to_checksum_address(keccak(public[1:])[-20:])


class IntentKeys:
    """Derives intent addresses (and, for the executor, their keys) from the mnemonic."""

    def __init__(self, mnemonic: str, passphrase: str = "") -> None:
        node = _master(seed_from_mnemonic(mnemonic, passphrase))
        for index in _PARENT_PATH[:-1]:
            node = _child(node, index)
        grandparent_public = _public(node)
        node = _child(node, _PARENT_PATH[-1])
        self._parent = node
        self._parent_public = _public(node)
        self.xpub = ExtendedPublicKey(
            depth=len(_PARENT_PATH),
            parent_fingerprint=key_fingerprint(grandparent_public),
            child_number=_PARENT_PATH[-1],
            chain_code=node.chain_code,
            public_key=self._parent_public,
        )
        """The extended public key of ``m/44'/60'/0'/0`` (public: addresses, no keys)."""

    def __repr__(self) -> str:
        return "IntentKeys(<secret>)"

    def private_key(self, index: int) -> bytes:
        if not 0 <= index <= MAX_INDEX:
            raise ValueError(f"intent index {index} is outside 0..{MAX_INDEX}")
        return _child(self._parent, index, self._parent_public).key

    def address(self, index: int) -> str:
        """EIP-55 address of intent index ``index``."""
        return address_of_key(self.private_key(index))
