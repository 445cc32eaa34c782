"""The optional second factor: TOTP (RFC 6238, 30 s steps, 6 digits, SHA-1, as every
authenticator app reads an ``otpauth://`` URI) and single-use recovery codes.

:func:`totp_step` accepts a code of the current step or of one step either side
(clock drift) and answers the step it matched, which the caller stores: a step at or
below the last one accepted is refused, so a code seen over a shoulder or replayed
from a log cannot be used a second time. Recovery codes are random (80 bits), so
SHA-256 is enough to store them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import quote

import pyotp

__all__ = [
    "RECOVERY_CODES",
    "code_hash",
    "new_recovery_codes",
    "new_totp_secret",
    "otpauth_uri",
    "totp_step",
]

RECOVERY_CODES = 10
_STEP = 30
_WINDOW = 1
_ISSUER = "intentd"
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"


def new_totp_secret() -> str:
    return pyotp.random_base32(32)


def otpauth_uri(secret: str, email: str, issuer: str = _ISSUER) -> str:
    label = quote(f"{issuer}:{email}")
    return f"otpauth://totp/{label}?secret={secret}&issuer={quote(issuer)}"


def totp_step(secret: str, code: str, now: float, last_step: int | None) -> int | None:
    """The time step whose code ``code`` is (within one step of ``now``), if it is later
    than ``last_step``; None otherwise."""
    code = code.strip().replace(" ", "")
    if len(code) != 6 or not code.isdigit():
        return None
    totp = pyotp.TOTP(secret, interval=_STEP)
    current = int(now) // _STEP
    for step in range(current - _WINDOW, current + _WINDOW + 1):
        if last_step is not None and step <= last_step:
            continue
        if hmac.compare_digest(totp.at(step * _STEP), code):
            return step
    return None


def new_recovery_codes() -> list[str]:
    """Codes shown once: ``xxxx-xxxx-xxxx-xxxx``, 16 base32 characters (80 bits) each."""
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = "".join(secrets.choice(_BASE32) for _ in range(16))
        codes.append("-".join(raw[i : i + 4] for i in range(0, 16, 4)))
    return codes


def code_hash(code: str) -> str:
    """What is stored of a recovery code (any case, dashes and spaces ignored)."""
    normal = code.strip().lower().replace("-", "").replace(" ", "")
    return hashlib.sha256(normal.encode()).hexdigest()
