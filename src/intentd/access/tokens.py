"""Random tokens of the console (session ids, sign-in links, CSRF tokens, device
cookies) and what is stored of them: 256 random bits each, so SHA-256 is enough (a
stolen table gives no usable token) and a lookup needs no per-token salt."""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["random_token", "same_token", "token_hash"]


def random_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same_token(given: str | None, expected: str) -> bool:
    """Constant-time comparison (CSRF tokens)."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())
