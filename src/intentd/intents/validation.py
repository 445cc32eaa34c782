"""Checks shared by intent creation and quotes: chains, tokens, addresses; stable error codes."""

from __future__ import annotations

from eth_utils import is_address, is_checksum_address

from intentd.intents.chain_names import find_chain
from intentd.settings import ChainConfig, NativeTokenConfig, Settings, TokenConfig

__all__ = [
    "IdempotencyConflict",
    "IntentConflict",
    "IntentRequestError",
    "check_address",
    "known_chain",
    "supported_token",
]

Token = TokenConfig | NativeTokenConfig


class IntentRequestError(ValueError):
    """A request that cannot become an intent or a quote; ``code`` and ``field`` are stable
    (``field`` None: no one field of the request is at fault)."""

    def __init__(self, code: str, field: str | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


class IntentConflict(IntentRequestError):
    """A request that is well formed but conflicts with what is stored (HTTP 409)."""


class IdempotencyConflict(IntentConflict):
    """The idempotency key was used before with a different request."""


def check_address(value: str | None, field: str, *, required: bool = True) -> str | None:
    """``value`` in lower case; EIP-55 checksum or all one case; None if absent and optional."""
    if value is None or value == "":
        if required:
            raise IntentRequestError("field_required", field, f"{field} is required")
        return None
    if not isinstance(value, str) or not is_address(value):
        raise IntentRequestError(
            "invalid_address", field, f"{field} {value!r} is not an EVM address"
        )
    mixed = value[2:] != value[2:].lower() and value[2:] != value[2:].upper()
    if mixed and not is_checksum_address(value):
        raise IntentRequestError(
            "invalid_address_checksum", field, f"{field} {value!r} has a wrong EIP-55 checksum"
        )
    return value.lower()


def known_chain(settings: Settings, name: str, field: str) -> ChainConfig:
    chain = find_chain(settings.chains, name)
    if chain is None:
        raise IntentRequestError(
            "unknown_chain", field, f"{field} {name!r} is not one of {sorted(settings.chains)}"
        )
    return chain


def supported_token(chain: ChainConfig, address: str | None, field: str) -> tuple[str, Token]:
    """(lowercase address, token) of a token ``chain`` supports, checked as ``field``."""
    lower = check_address(address, field)
    assert lower is not None
    token = chain.token(lower)
    if token is None:
        raise IntentRequestError(
            "unknown_token", field, f"{field} {address} is not supported on {chain.name}"
        )
    return lower, token
