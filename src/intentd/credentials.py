"""API keys and which networks they open (pure).

A key is ``itd_<mode>_<43 url-safe characters>`` (256 random bits), for example
``itd_test_Qm9v…``. Only its SHA-256 is stored: the key has enough entropy that a
fast hash is safe, and a lookup by hash needs no per-key salt. The first 12
characters after the mode (the *prefix*) are stored too, so operators can tell
keys apart without holding them.

Modes (spec, Authentication): a ``live`` key opens main networks only; a ``test``
key opens test networks, and main networks too in a deployment whose
``environment`` is ``test``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Literal

from intentd.contract.mode import Mode

__all__ = ["NewKey", "allowed_networks", "generate_key", "hash_key", "looks_like_key"]

_KEY = re.compile(r"^itd_(test|live)_[A-Za-z0-9_-]{43}$")
PREFIX_CHARS = 12


@dataclass(frozen=True, slots=True, repr=False)
class NewKey:
    key: str
    """The secret; shown once, never stored."""
    prefix: str
    key_hash: str

    def __repr__(self) -> str:
        return f"NewKey(prefix={self.prefix!r})"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def generate_key(mode: Mode) -> NewKey:
    key = f"itd_{mode}_{secrets.token_urlsafe(32)}"
    return NewKey(key=key, prefix=key[: len(f"itd_{mode}_") + PREFIX_CHARS], key_hash=hash_key(key))


def looks_like_key(text: str) -> bool:
    """Whether ``text`` has the shape of an API key (cheap check before any lookup)."""
    return _KEY.match(text) is not None


def allowed_networks(mode: Mode, environment: Literal["production", "test"]) -> frozenset[str]:
    """Network classes (``main``, ``test``) a key of ``mode`` may use in ``environment``."""
    if mode == "live":
        return frozenset({"main"})
    if environment == "test":
        return frozenset({"test", "main"})
    return frozenset({"test"})
