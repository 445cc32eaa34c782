"""Standard Webhooks signatures (https://www.standardwebhooks.com), pure.

Every request carries three headers:

- ``webhook-id``: the event's id, the same on every attempt (receivers dedupe by it);
- ``webhook-timestamp``: Unix seconds when this attempt was signed;
- ``webhook-signature``: space-separated ``v1,<base64 HMAC-SHA256>`` of
  ``"<webhook-id>.<webhook-timestamp>.<body>"``, one per valid secret of the endpoint
  (two while a rotated-out secret is still valid).

A secret is ``whsec_<base64 of 32 random bytes>``; the HMAC key is the decoded bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence

__all__ = [
    "SECRET_PREFIX",
    "SignatureError",
    "new_secret",
    "secret_key",
    "sign",
    "signed_headers",
    "verify",
]

SECRET_PREFIX = "whsec_"
_SECRET_BYTES = 32
DEFAULT_TOLERANCE = 300
"""Seconds a receiver accepts between ``webhook-timestamp`` and its own clock."""


class SignatureError(ValueError):
    """A signature (or a secret) that does not verify or cannot be read."""


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The HMAC key of ``secret`` (``whsec_`` prefix optional); SignatureError if invalid."""
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError("the secret is not whsec_<base64>") from None
    if len(key) < 16:
        raise SignatureError("the secret is shorter than 16 bytes")
    return key


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of "id.timestamp.body">``."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(
    msg_id: str, timestamp: int, body: bytes, secrets_: Sequence[str]
) -> dict[str, str]:
    """The three Standard Webhooks headers, one signature per secret (newest first)."""
    if not secrets_:
        raise SignatureError("an endpoint needs at least one secret")
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(sign(s, msg_id, timestamp, body) for s in secrets_),
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: int,
    tolerance: int = DEFAULT_TOLERANCE,
) -> None:
    """Raise SignatureError unless one ``v1`` signature of ``headers`` is ``secret``'s
    and the timestamp is within ``tolerance`` seconds of ``now`` (what a receiver does)."""
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id = lower.get("webhook-id")
    stamp = lower.get("webhook-timestamp")
    signatures = lower.get("webhook-signature")
    if not (msg_id and stamp and signatures):
        raise SignatureError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise SignatureError("webhook-timestamp is not an integer") from None
    if abs(now - timestamp) > tolerance:
        raise SignatureError("webhook-timestamp is outside the tolerance")
    expected = sign(secret, msg_id, timestamp, body).encode()
    for candidate in signatures.split(" "):
        if candidate.startswith("v1,") and hmac.compare_digest(candidate.encode(), expected):
            return
    raise SignatureError("no matching signature")
