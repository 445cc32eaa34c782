"""Session tokens of the payment-modal flow: HMAC-SHA256 signed, short-lived (pure).

A token is ``itd_sess_<payload>.<signature>``: the payload is the URL-safe base64
(no padding) of the session's JSON, the signature the URL-safe base64 of
HMAC-SHA256(secret, ``"intentd-session-v1." + payload``). Nothing is stored: the
token carries its constraints, and the API checks on each use that it is signed,
unexpired, and that the API key that made it is still active. It never grants
more than it states (one recipient, amount, destination chain and token).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import orjson

__all__ = ["Session", "SessionError", "sign_session", "verify_session"]

PREFIX = "itd_sess_"
_DOMAIN = b"intentd-session-v1."
_SHAPE = re.compile(r"^itd_sess_([A-Za-z0-9_-]{1,4096})\.([A-Za-z0-9_-]{43})$")


class SessionError(ValueError):
    """An unusable token; ``code`` is ``invalid_session_token`` or ``session_expired``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    key_id: UUID
    client_id: UUID
    recipient: str
    """Lowercase address."""
    amount: str | None
    """Decimal in whole units of ``token``; None when the payer chooses."""
    destination_chain: str
    token: str
    """Lowercase address of the token the recipient gets, on ``destination_chain``."""
    exclude_chains: tuple[str, ...]
    issued_at: int
    expires_at: int
    """Seconds since the epoch."""

    def to_json(self) -> dict[str, Any]:
        return {
            "sid": self.id,
            "kid": str(self.key_id),
            "cid": str(self.client_id),
            "rcp": self.recipient,
            "amt": self.amount,
            "dst": self.destination_chain,
            "tok": self.token,
            "exc": list(self.exclude_chains),
            "iat": self.issued_at,
            "exp": self.expires_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Session:
        return cls(
            id=str(data["sid"]),
            key_id=UUID(data["kid"]),
            client_id=UUID(data["cid"]),
            recipient=str(data["rcp"]),
            amount=None if data["amt"] is None else str(data["amt"]),
            destination_chain=str(data["dst"]),
            token=str(data["tok"]),
            exclude_chains=tuple(str(c) for c in data["exc"]),
            issued_at=int(data["iat"]),
            expires_at=int(data["exp"]),
        )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, payload: str) -> bytes:
    return hmac.new(secret, _DOMAIN + payload.encode(), hashlib.sha256).digest()


def sign_session(session: Session, secret: bytes) -> str:
    payload = _b64(orjson.dumps(session.to_json()))
    return f"{PREFIX}{payload}.{_b64(_mac(secret, payload))}"


def verify_session(token: str, secret: bytes, now: float) -> Session:
    """The session of a genuine, unexpired ``token``; raise :class:`SessionError` otherwise."""
    match = _SHAPE.match(token)
    if match is None:
        raise SessionError("invalid_session_token", "not a session token")
    payload, signature = match.group(1), match.group(2)
    try:
        given = _unb64(signature)
    except (binascii.Error, ValueError):
        raise SessionError("invalid_session_token", "malformed signature") from None
    if not hmac.compare_digest(given, _mac(secret, payload)):
        raise SessionError("invalid_session_token", "the signature does not match")
    try:
        session = Session.from_json(orjson.loads(_unb64(payload)))
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise SessionError("invalid_session_token", "malformed payload") from None
    if now >= session.expires_at:
        raise SessionError("session_expired", "the session has expired; create a new one")
    return session
