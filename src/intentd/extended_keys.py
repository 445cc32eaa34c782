"""Intent addresses from an extended public key (BIP-32 ``xpub``), no secret needed.

The roles that only need addresses (the API, ``intents create``) hold the extended
public key of ``m/44'/60'/0'/0`` and derive the address of intent index ``i`` as its
non-hardened child ``i``: the same address the executor's private derivation of
``m/44'/60'/0'/0/i`` gives (``custody.IntentKeys``), without the power to spend.

The key is written in the standard BIP-32 serialization (``xpub…``, Base58Check,
mainnet public version bytes), so a wallet holding the mnemonic can show the same
string and an operator can compare them. Parsing checks the checksum, the version,
that the point is on the curve, and that the key is the one intentd derives from:
depth 4 and child number 0 (``m/44'/60'/0'/0``); anything else is refused, because
its children would be addresses nobody derives keys for.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

import coincurve
from eth_utils import keccak, to_checksum_address

__all__ = [
    "INTENT_PARENT_DEPTH",
    "ExtendedPublicKey",
    "IntentAddresses",
    "address_of_public_key",
    "key_fingerprint",
]

_CURVE_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_HARDENED = 0x8000_0000
_XPUB_VERSION = bytes.fromhex("0488b21e")
_XPRV_VERSION = bytes.fromhex("0488ade4")
_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
INTENT_PARENT_DEPTH = 4
"""Depth of ``m/44'/60'/0'/0``, the parent of every intent address."""


def _base58check_encode(payload: bytes) -> str:
    data = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    number = int.from_bytes(data, "big")
    digits = []
    while number:
        number, rest = divmod(number, 58)
        digits.append(_ALPHABET[rest])
    zeros = len(data) - len(data.lstrip(b"\x00"))
    return "1" * zeros + "".join(reversed(digits))


def _base58check_decode(text: str) -> bytes:
    number = 0
    for char in text:
        value = _ALPHABET.find(char)
        if value < 0:
            raise ValueError(f"{char!r} is not a Base58 character")
        number = number * 58 + value
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big")
    data = b"\x00" * zeros + body
    if len(data) < 5:
        raise ValueError("too short")
    payload, checksum = data[:-4], data[-4:]
    if hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] != checksum:
        raise ValueError("bad Base58Check checksum (a typo, or a truncated key)")
    return payload


def _hash160(data: bytes) -> bytes:
    return hashlib.new("ripemd160", hashlib.sha256(data).digest()).digest()


def key_fingerprint(public_key: bytes) -> bytes:
    """BIP-32 fingerprint of a compressed public key: the first 4 bytes of its HASH160."""
    return _hash160(public_key)[:4]


def address_of_public_key(public_key: coincurve.PublicKey) -> str:
    """EIP-55 address of a secp256k1 public key."""
    return to_checksum_address(keccak(public_key.format(compressed=False)[1:])[-20:])


@dataclass(frozen=True, slots=True)
class ExtendedPublicKey:
    """A BIP-32 extended public key: a compressed point and its chain code."""

    depth: int
    parent_fingerprint: bytes
    child_number: int
    chain_code: bytes
    public_key: bytes
    """33-byte compressed secp256k1 point."""

    @classmethod
    def parse(cls, text: str) -> ExtendedPublicKey:
        """Decode an ``xpub…`` string; raise ValueError saying what is wrong (never
        echoing a private key pasted by mistake)."""
        payload = _base58check_decode(text.strip())
        if len(payload) != 78:
            raise ValueError(f"{len(payload)} bytes, a BIP-32 extended key has 78")
        version = payload[:4]
        if version == _XPRV_VERSION:
            raise ValueError("this is an extended PRIVATE key (xprv); give the xpub")
        if version != _XPUB_VERSION:
            raise ValueError(f"version {version.hex()} is not a mainnet xpub (0488b21e)")
        key = payload[45:78]
        try:
            coincurve.PublicKey(key)
        except ValueError:
            raise ValueError("the public key is not a point on secp256k1") from None
        if key[0] not in (2, 3):
            raise ValueError("the public key is not compressed")
        return cls(
            depth=payload[4],
            parent_fingerprint=payload[5:9],
            child_number=int.from_bytes(payload[9:13], "big"),
            chain_code=payload[13:45],
            public_key=key,
        )

    def serialize(self) -> str:
        """The standard ``xpub…`` string."""
        return _base58check_encode(
            _XPUB_VERSION
            + bytes([self.depth])
            + self.parent_fingerprint
            + self.child_number.to_bytes(4, "big")
            + self.chain_code
            + self.public_key
        )

    def __str__(self) -> str:
        return self.serialize()

    @property
    def fingerprint(self) -> bytes:
        """First 4 bytes of HASH160 of the key: its children's ``parent_fingerprint``."""
        return key_fingerprint(self.public_key)

    def child(self, index: int) -> ExtendedPublicKey:
        """BIP-32 public child derivation (CKDpub); only non-hardened indexes exist."""
        if not 0 <= index < _HARDENED:
            raise ValueError(f"index {index}: public derivation needs 0 <= index < 2**31")
        digest = hmac.new(
            self.chain_code, self.public_key + index.to_bytes(4, "big"), hashlib.sha512
        ).digest()
        tweak = int.from_bytes(digest[:32], "big")
        if tweak >= _CURVE_ORDER:  # probability ~2**-127; BIP-32 says skip the index
            raise ValueError(f"BIP-32 index {index} is invalid for this key")
        try:
            point = coincurve.PublicKey(self.public_key).add(digest[:32])
        except ValueError:  # the point at infinity, as unlikely
            raise ValueError(f"BIP-32 index {index} is invalid for this key") from None
        return ExtendedPublicKey(
            depth=self.depth + 1,
            parent_fingerprint=self.fingerprint,
            child_number=index,
            chain_code=digest[32:],
            public_key=point.format(compressed=True),
        )


class IntentAddresses:
    """Derives intent addresses from the extended public key of ``m/44'/60'/0'/0``."""

    def __init__(self, xpub: ExtendedPublicKey) -> None:
        if xpub.depth != INTENT_PARENT_DEPTH or xpub.child_number != 0:
            raise ValueError(
                f"depth {xpub.depth}, child {xpub.child_number}: intentd needs the xpub of"
                " m/44'/60'/0'/0 (depth 4, child 0); print it with `intentd keys xpub`"
            )
        self.xpub = xpub

    def __repr__(self) -> str:
        return f"IntentAddresses(fingerprint={self.xpub.fingerprint.hex()})"

    def address(self, index: int) -> str:
        """EIP-55 address of intent index ``index``."""
        if not 0 <= index < _HARDENED:
            raise ValueError(f"intent index {index} is outside 0..{_HARDENED - 1}")
        child = self.xpub.child(index)
        return address_of_public_key(coincurve.PublicKey(child.public_key))
