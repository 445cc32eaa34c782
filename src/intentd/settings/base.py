"""What every part of the settings shares: the error, the strict frozen model, addresses.

- :class:`ConfigError`: the configuration cannot be used; its message names the key and
  the wrong value (never a secret, RPC URLs only redacted).
- :class:`ConfigModel`: every section refuses unknown keys and is immutable once read.
- :data:`Address`: an EVM address, stored checksummed; anything else is refused.
- :data:`NATIVE_TOKEN`: the pseudo-address of a chain's native coin.
"""

from __future__ import annotations

from typing import Annotated

from eth_utils import is_address, to_checksum_address
from pydantic import AfterValidator, BaseModel, ConfigDict

NATIVE_TOKEN = "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE"
"""Pseudo-address that stands for a chain's native coin wherever a token address goes."""


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key and value."""


def _checksum(value: str) -> str:
    if not isinstance(value, str) or not is_address(value):
        raise ValueError("not an EVM address (0x followed by 40 hex digits, valid checksum)")
    return to_checksum_address(value)


Address = Annotated[str, AfterValidator(_checksum)]


class ConfigModel(BaseModel):
    """A config section: unknown keys are refused; frozen once validated."""

    model_config = ConfigDict(extra="forbid", frozen=True)
