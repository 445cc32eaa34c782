"""Console passwords: the policy a new one must meet, argon2id hashing and checking.

Hashes are argon2id with argon2-cffi's defaults (RFC 9106's second recommended
profile: 64 MiB, 3 passes, 4 lanes): about 0.1-0.2 s of CPU each, which callers run
off the event loop (:func:`hash_password` and :func:`check_password` are blocking).
:func:`check_password` against :data:`DUMMY_HASH` costs the same as against a real
hash, so a sign-in for an email that has no account takes as long as one that has.
"""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

__all__ = [
    "DUMMY_HASH",
    "MAX_LENGTH",
    "MIN_LENGTH",
    "check_password",
    "hash_password",
    "needs_rehash",
    "password_problem",
]

MIN_LENGTH = 12
MAX_LENGTH = 256
"""Longer inputs are refused before hashing (each costs the same memory; no DoS lever)."""
_HASHER = PasswordHasher()
DUMMY_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$wiMUzZAjiD5MXWnx9cdjGw"
    "$a5mgTVR8YAUivs/2vz0DDQs77odxivmhH68i1IlixsM"
)
"""A hash of no one's password, with the hasher's parameters (a test keeps them equal),
written out: hashing it at import would cost every process that imports this module
64 MiB and 0.1 s at start."""


def password_problem(password: str, email: str) -> str | None:
    """Why ``password`` cannot be a console password (None: it can)."""
    if len(password) < MIN_LENGTH:
        return f"a password has at least {MIN_LENGTH} characters"
    if len(password) > MAX_LENGTH:
        return f"a password has at most {MAX_LENGTH} characters"
    if password.strip().lower() == email.strip().lower():
        return "a password cannot be the email address"
    if len(set(password)) < 5:
        return "a password needs at least 5 different characters"
    return None


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def check_password(stored: str | None, password: str) -> bool:
    """Whether ``password`` matches ``stored`` (None: no password set yet, which never
    matches, after the same work)."""
    if len(password) > MAX_LENGTH:
        return False
    try:
        return _HASHER.verify(stored or DUMMY_HASH, password) and stored is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    """Whether ``stored`` was made with other parameters than today's (rehash at sign-in)."""
    return _HASHER.check_needs_rehash(stored)
