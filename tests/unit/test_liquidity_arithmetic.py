"""The relayer's float (``domain.liquidity``): properties over integers in base units."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.domain.liquidity import BPS, Float, cover, shortfall

UNITS = st.integers(min_value=0, max_value=2**256 - 1)
SMALL = st.integers(min_value=0, max_value=10**30)
FACTOR = st.integers(min_value=BPS, max_value=100 * BPS)
TOKENS = st.sampled_from(["usdc", "usdt", "eth"])


@st.composite
def floats(draw: st.DrawFn, units: st.SearchStrategy[int] = SMALL) -> Float:
    return Float(draw(units), draw(units), draw(units), draw(units))


@given(floats(UNITS), FACTOR)
def test_cover_is_never_more_than_free_nor_negative(figures: Float, factor: int) -> None:
    found = cover(figures, factor)
    assert 0 <= found <= max(figures.free, 0)
    assert figures.pending + found <= max(figures.free, 0) * factor // BPS or found == 0


@given(st.lists(st.integers(min_value=1, max_value=10**30), max_size=30), SMALL, SMALL, FACTOR)
def test_admitting_every_intent_that_fits_keeps_the_pending_total_within_the_factor(
    asks: list[int], balance: int, reserved: int, factor: int
) -> None:
    """Intents admitted one after the other (each within the cover at its turn; an
    intent always asks for something: amounts are positive)."""
    figures = Float(balance, reserved)
    for ask in asks:
        if ask <= cover(figures, factor):
            assert ask <= figures.free
            figures = Float(balance, reserved, pending=figures.pending + ask)
    assert figures.pending == 0 or figures.pending * BPS <= figures.free * factor


@given(floats(), SMALL, FACTOR)
def test_more_balance_never_covers_less_and_more_commitments_never_more(
    figures: Float, extra: int, factor: int
) -> None:
    b, r, o, p = figures.balance, figures.reserved, figures.owed, figures.pending
    assert cover(Float(b + extra, r, o, p), factor) >= cover(figures, factor)
    assert cover(Float(b, r + extra, o, p), factor) <= cover(figures, factor)
    assert cover(Float(b, r, o, p + extra), factor) <= cover(figures, factor)
    assert cover(Float(b, r, o + extra, p), factor) == cover(figures, factor)  # not spendable


@given(floats(), FACTOR)
def test_more_over_commit_never_covers_less(figures: Float, factor: int) -> None:
    assert cover(figures, factor + 1) >= cover(figures, factor)


@pytest.mark.parametrize(
    ("figures", "factor", "expected"),
    [
        (Float(1_000, 0), BPS, 1_000),
        (Float(1_000, 400), BPS, 600),  # free is what is not reserved
        (Float(1_000, 0, pending=700), BPS, 300),  # 1x: pending and the new one within free
        (Float(1_000, 0, pending=700), 2 * BPS, 1_000),  # 2x: 2,000 - 700, at most free
        (Float(1_000, 0, pending=1_800), 2 * BPS, 200),
        (Float(1_000, 0, pending=2_500), 2 * BPS, 0),
        (Float(1_000, 1_200), 3 * BPS, 0),  # prefills wait for funds: nothing more
        (Float(1_000, 0, owed=10**9), BPS, 1_000),  # owed is not spent before it arrives
        (Float(999, 0), 15_000, 999),
        (Float(999, 0, pending=1), 15_000, 999),  # floor(1498.5) - 1 = 1497, then free
        (Float(999, 0, pending=1_000), 15_000, 498),
    ],
)
def test_cover_table(figures: Float, factor: int, expected: int) -> None:
    assert cover(figures, factor) == expected


def test_a_factor_below_one_and_negative_figures_are_refused() -> None:
    with pytest.raises(ValueError, match="over-commit"):
        cover(Float(1), BPS - 1)
    with pytest.raises(ValueError, match="negative"):
        Float(-1)


@given(
    st.dictionaries(TOKENS, SMALL, max_size=3),
    st.dictionaries(TOKENS, SMALL, max_size=3),
    st.dictionaries(TOKENS, SMALL, max_size=3),
)
def test_a_shortfall_is_exactly_what_is_missing_and_empty_only_when_all_is_paid(
    needs: dict[str, int], balances: dict[str, int], in_flight: dict[str, int]
) -> None:
    short = shortfall(needs, balances, in_flight)
    for token, need in needs.items():
        missing = need + in_flight.get(token, 0) - balances.get(token, 0)
        assert short.get(token, 0) == max(missing, 0)
    assert set(short) <= set(needs)
    assert (not short) == all(
        need + in_flight.get(t, 0) <= balances.get(t, 0) for t, need in needs.items()
    )


def test_a_token_without_a_balance_counts_as_none_held() -> None:
    assert shortfall({"usdc": 1}, {}, {}) == {"usdc": 1}
    assert shortfall({"usdc": 0}, {}, {}) == {}
