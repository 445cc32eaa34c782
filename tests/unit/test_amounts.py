"""Money arithmetic: exact, no floats, strict at the edge."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.domain.amounts import (
    MAX_BASE_UNITS,
    AmountError,
    format_amount,
    parse_amount,
    rescale,
)


@given(st.integers(min_value=1, max_value=MAX_BASE_UNITS), st.integers(min_value=0, max_value=36))
def test_format_then_parse_is_identity(value: int, decimals: int) -> None:
    assert parse_amount(format_amount(value, decimals), decimals) == value


@given(st.integers(min_value=0, max_value=10**30), st.integers(min_value=0, max_value=30))
def test_format_has_no_trailing_zeros_and_no_exponent(value: int, decimals: int) -> None:
    text = format_amount(value, decimals)
    assert "e" not in text.lower()
    if "." in text:
        assert not text.endswith("0")
        assert len(text.split(".")[1]) <= decimals


@pytest.mark.parametrize(
    ("text", "decimals", "expected"),
    [
        ("1", 6, 1_000_000),
        ("1.5", 6, 1_500_000),
        ("0.000001", 6, 1),
        ("12.340000000", 6, 12_340_000),  # zeros past the token's decimals are harmless
        ("100", 0, 100),
        ("0.1", 18, 10**17),
    ],
)
def test_parse_examples(text: str, decimals: int, expected: int) -> None:
    assert parse_amount(text, decimals) == expected


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("0.0000001", "amount_too_precise"),
        ("-1", "amount_negative"),
        ("1e6", "amount_malformed"),
        ("", "amount_malformed"),
        (" ", "amount_malformed"),
        ("01.5", "amount_malformed"),
        ("1.", "amount_malformed"),
        (".5", "amount_malformed"),
        ("NaN", "amount_malformed"),
        ("1,5", "amount_malformed"),
        ("0", "amount_zero"),
        ("0.000", "amount_zero"),
        (str(2**256), "amount_too_large"),
    ],
)
def test_parse_rejects_with_stable_code(text: str, code: str) -> None:
    with pytest.raises(AmountError) as raised:
        parse_amount(text, 6)
    assert raised.value.code == code


def test_zero_allowed_only_when_asked() -> None:
    assert parse_amount("0", 6, allow_zero=True) == 0


@given(st.integers(min_value=0, max_value=10**40), st.integers(0, 36), st.integers(0, 36))
def test_rescale_never_creates_value(value: int, a: int, b: int) -> None:
    # Converting there and back never yields more than we started with.
    assert rescale(rescale(value, a, b), b, a) <= value
    if b >= a:
        assert rescale(rescale(value, a, b), b, a) == value
