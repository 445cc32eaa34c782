"""The tokens a chain supports, and what moving each out of an intent address needs.

A token's ``min_sweep`` and ``verify_above`` are decimal strings of whole units, checked
against its ``decimals`` when the config is read (the error names the token); a volatile
token has no default ``min_sweep`` and must set one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from intentd.domain.amounts import AmountError, parse_amount
from intentd.settings.base import Address
from intentd.settings.pricing import PricedToken

MIN_SWEEP_DEFAULTS = {"stablecoin": "0.1", "major": "0.00005"}
"""Default ``min_sweep`` per token category, whole units (see docs/execution.md)."""


class _SweptToken(PricedToken):
    """What every supported token says about moving it out of an intent address (and,
    from :class:`PricedToken`, about its USD price)."""

    symbol: str
    decimals: int
    category: Literal["stablecoin", "major", "volatile"]
    min_sweep: str | None = None
    """Smallest amount (whole units, a decimal string) a user refund or a fee sweep
    moves out of an intent address; a smaller one is retained there. Default: 0.1 for
    a stablecoin, 0.00005 for a major token; a volatile token must set it."""

    verify_above: str | None = None
    """Above this sum of an intent's credited deposits of the token (whole units, a
    decimal string), each of them is confirmed by the chain's ``verify_rpc_urls``
    before the prefill is signed (docs/execution.md). Unset: never."""

    @model_validator(mode="after")
    def _verify_above(self) -> _SweptToken:
        if self.verify_above is not None:
            try:
                parse_amount(self.verify_above, self.decimals, allow_zero=True)
            except AmountError as exc:
                raise ValueError(f"verify_above of {self.symbol}: {exc}") from None
        return self

    @property
    def verify_above_units(self) -> int | None:
        """``verify_above`` in base units, or None."""
        if self.verify_above is None:
            return None
        return parse_amount(self.verify_above, self.decimals, allow_zero=True)

    @model_validator(mode="after")
    def _min_sweep(self) -> _SweptToken:
        text = self.min_sweep or MIN_SWEEP_DEFAULTS.get(self.category)
        if text is None:
            raise ValueError(f"min_sweep: token {self.symbol} is volatile; set its minimum")
        try:
            parse_amount(text, self.decimals, allow_zero=True)
        except AmountError as exc:
            raise ValueError(f"min_sweep of {self.symbol}: {exc}") from None
        return self

    @property
    def min_sweep_units(self) -> int:
        """``min_sweep`` in base units."""
        text = self.min_sweep or MIN_SWEEP_DEFAULTS[self.category]
        return parse_amount(text, self.decimals, allow_zero=True)


class TokenConfig(_SweptToken):
    """An ERC-20 token the chain supports (deposits of any other contract are ignored)."""

    address: Address
    symbol: str = Field(min_length=1, max_length=16)
    name: str = Field(min_length=1)
    decimals: int = Field(ge=0, le=36)
    category: Literal["stablecoin", "major", "volatile"]


class NativeTokenConfig(_SweptToken):
    """The chain's native coin; it appears under the address ``NATIVE_TOKEN``."""

    symbol: str = "ETH"
    name: str = "Ether"
    decimals: int = Field(default=18, ge=0, le=36)
    category: Literal["stablecoin", "major", "volatile"] = "major"
