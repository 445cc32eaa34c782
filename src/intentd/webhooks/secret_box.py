"""Endpoint secrets at rest: AES-256-GCM under a key the database never sees.

The key is 32 bytes, given base64- or hex-encoded in ``INTENTD_WEBHOOK_KEY`` or in the
file ``INTENTD_WEBHOOK_KEY_FILE`` names (settings ``webhook_key``); make one with
``python -c "import os, base64; print(base64.b64encode(os.urandom(32)).decode())"``.
A sealed secret is ``version (1 byte) || nonce (12) || ciphertext+tag``, bound to its
endpoint's id (associated data), so a sealed value copied onto another endpoint's
row does not open. A database dump alone reveals no secret.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from intentd.settings import ConfigError, Settings

__all__ = ["SecretBox", "SecretBoxError", "parse_key", "secret_box"]

_VERSION = b"\x01"
_NONCE = 12


class SecretBoxError(ValueError):
    """A key that is not 32 bytes, or a sealed secret that does not open."""


def parse_key(text: str) -> bytes:
    """The 32-byte key in ``text`` (base64, URL-safe base64 or hex)."""
    text = text.strip()
    candidates: list[bytes] = []
    with contextlib.suppress(ValueError):
        candidates.append(bytes.fromhex(text))
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        with contextlib.suppress(binascii.Error, ValueError):
            candidates.append(decode(text + "=" * (-len(text) % 4)))
    for key in candidates:
        if len(key) == 32:
            return key
    raise SecretBoxError("the webhook key must be 32 bytes, base64 or hex")


class SecretBox:
    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise SecretBoxError("the webhook key must be 32 bytes")
        self._aead = AESGCM(key)

    def __repr__(self) -> str:
        return "SecretBox(<key>)"

    def seal(self, secret: str, endpoint_id: UUID) -> bytes:
        nonce = os.urandom(_NONCE)
        sealed = self._aead.encrypt(nonce, secret.encode(), _VERSION + endpoint_id.bytes)
        return _VERSION + nonce + sealed

    def open(self, sealed: bytes, endpoint_id: UUID) -> str:
        if len(sealed) < 1 + _NONCE + 16 or sealed[:1] != _VERSION:
            raise SecretBoxError("not a sealed webhook secret")
        try:
            plain = self._aead.decrypt(
                sealed[1 : 1 + _NONCE], sealed[1 + _NONCE :], _VERSION + endpoint_id.bytes
            )
        except InvalidTag:
            raise SecretBoxError(
                "a webhook secret does not open with this key (another key, or tampered)"
            ) from None
        return plain.decode()


def secret_box(settings: Settings) -> SecretBox:
    """The box that seals endpoint secrets; ConfigError without a usable key."""
    if settings.webhook_key is None:
        raise ConfigError(
            "webhook_key: not set; give INTENTD_WEBHOOK_KEY or INTENTD_WEBHOOK_KEY_FILE"
            " (32 bytes, base64 or hex; docs/webhooks.md, Operations)"
        )
    try:
        return SecretBox(parse_key(settings.webhook_key.get_secret_value()))
    except SecretBoxError as exc:
        raise ConfigError(f"webhook_key = <secret>: {exc}") from None
