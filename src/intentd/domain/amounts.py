"""Token amounts: integers in base units inside, exact decimal strings at the edge.

No floats anywhere: ``parse_amount("1.5", 6) == 1_500_000`` and
``format_amount(1_500_000, 6) == "1.5"``. Parsing rejects what a careful payments
API must not guess at (more decimals than the token has, signs, exponents, blanks).
"""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"^(0|[1-9][0-9]*)(?:\.([0-9]+))?$")
MAX_BASE_UNITS = 2**256 - 1


class AmountError(ValueError):
    """An amount that cannot be used; ``code`` is stable for API error bodies."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def parse_amount(text: str, decimals: int, *, allow_zero: bool = False) -> int:
    """Base units of the decimal string ``text`` for a token with ``decimals``."""
    if not isinstance(text, str):
        raise AmountError("amount_not_a_string", "amount must be a decimal string")
    stripped = text.strip()
    if stripped.startswith("-"):
        raise AmountError("amount_negative", f"amount {text!r} is negative")
    match = _DECIMAL.match(stripped)
    if match is None:
        raise AmountError(
            "amount_malformed", f"amount {text!r} is not a plain decimal number like '12.5'"
        )
    whole, fraction = match.group(1), match.group(2) or ""
    if len(fraction) > decimals:
        trimmed = fraction.rstrip("0")
        if len(trimmed) > decimals:
            raise AmountError(
                "amount_too_precise",
                f"amount {text!r} has {len(trimmed)} decimals; the token has {decimals}",
            )
        fraction = trimmed
    value = int(whole) * _pow10(decimals) + int(fraction.ljust(decimals, "0") or "0")
    if value == 0 and not allow_zero:
        raise AmountError("amount_zero", "amount must be greater than zero")
    if value > MAX_BASE_UNITS:
        raise AmountError("amount_too_large", f"amount {text!r} does not fit in 256 bits")
    return value


def format_amount(value: int, decimals: int) -> str:
    """The shortest exact decimal string of ``value`` base units."""
    if value < 0:
        return "-" + format_amount(-value, decimals)
    if decimals == 0:
        return str(value)
    whole, fraction = divmod(value, _pow10(decimals))
    digits = str(fraction).rjust(decimals, "0").rstrip("0")
    return f"{whole}.{digits}" if digits else str(whole)


def rescale(value: int, from_decimals: int, to_decimals: int) -> int:
    """Convert base units between tokens of equal unit value, rounding down."""
    if to_decimals >= from_decimals:
        return value * _pow10(to_decimals - from_decimals)
    return value // _pow10(from_decimals - to_decimals)


def _pow10(exponent: int) -> int:
    result: int = 10**exponent
    return result
