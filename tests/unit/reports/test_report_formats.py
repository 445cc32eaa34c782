"""The pure edges of the reports: date ranges, CSV cells, USD at the quote, rows, and
the transfer read back from a transaction's signed bytes."""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.reports.world import DESTINATION, SOURCE, USDC, USDC_OUT, report_settings

from intentd.adapters.evm.signer import sign
from intentd.domain.actions import NATIVE
from intentd.execution.gas import Fees
from intentd.execution.tx_plans import Purpose, TxPlan, erc20_transfer_data
from intentd.reports.cells import FORMULA_STARTS, CsvChunks, safe_cell
from intentd.reports.movements import (
    COLUMNS,
    IntentRef,
    Movement,
    MovementKind,
    TokenBook,
    render_row,
    usd_at_quote,
)
from intentd.reports.ranges import MAX_RANGE, RangeError, parse_range
from intentd.reports.signed_transfers import decode, transfer_of

# --- ranges ------------------------------------------------------------------------


def test_a_range_is_from_inclusive_to_exclusive_in_utc() -> None:
    found = parse_range("2026-11-01T00:00:00Z", "2026-11-01T02:00:00+01:00")
    assert found.start == datetime(2026, 11, 1, tzinfo=UTC)
    assert found.end == datetime(2026, 11, 1, 1, tzinfo=UTC)
    assert found.label() == "20261101T000000Z_20261101T010000Z"


@pytest.mark.parametrize(
    ("start", "end", "code", "field"),
    [
        ("2026-11-01", "2026-12-01T00:00:00Z", "invalid_time", "from"),  # no zone
        ("2026-11-01T00:00:00Z", "tomorrow", "invalid_time", "to"),
        ("2026-11-01T00:00:00Z", "2026-11-01T00:00:00+00:00", "range_reversed", "to"),
        ("2026-12-01T00:00:00Z", "2026-11-01T00:00:00Z", "range_reversed", "to"),
        ("2025-01-01T00:00:00Z", "2026-01-02T00:00:01Z", "range_too_long", "to"),
        ("0001-01-01T00:00:00+05:00", "2026-01-01T00:00:00Z", "invalid_time", "from"),
    ],
)
def test_a_bad_range_is_refused_precisely(start: str, end: str, code: str, field: str) -> None:
    with pytest.raises(RangeError) as refused:
        parse_range(start, end)
    assert (refused.value.code, refused.value.field) == (code, field)


def test_a_year_is_the_longest_range() -> None:
    found = parse_range("2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z")  # 366 days
    assert found.end - found.start == MAX_RANGE


# --- CSV cells ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("12.5", "12.5"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_a_cell_that_starts_a_formula_is_escaped(text: str, cell: str) -> None:
    assert safe_cell(text) == cell


@given(st.lists(st.lists(st.text(), min_size=1, max_size=5), min_size=1, max_size=20))
def test_rows_read_back_as_written_and_never_start_a_formula(rows: list[list[str]]) -> None:
    chunks = CsvChunks(chunk_bytes=64)
    body = b"".join([*chunks.add_all(rows), chunks.flush()]).decode()
    read = list(csv.reader(io.StringIO(body, newline="")))
    assert read == [[safe_cell(cell) for cell in row] for row in rows]
    for row in read:
        for cell in row:
            assert not cell or cell[0] not in FORMULA_STARTS
            assert cell == (cell[1:] if cell.startswith("'") else cell) or cell[0] == "'"


def test_chunks_are_bounded() -> None:
    chunks = CsvChunks(chunk_bytes=1000)
    sent = chunks.add_all([["x" * 100] * 5] * 100)
    assert len(sent) > 30 and all(len(chunk) < 1000 + 600 for chunk in sent)


# --- USD at the intent's quote -------------------------------------------------------


def intent(
    total_usd: Decimal | None = Decimal("10.10"), fees_usd: Decimal = Decimal("0.10")
) -> IntentRef:
    return IntentRef(
        id=7,
        address="0x" + "5" * 40,
        source_chain=SOURCE,
        destination_chain=DESTINATION,
        token_in=USDC,
        token_out=USDC_OUT,
        token_in_symbol="USDC",
        token_in_decimals=6,
        token_out_decimals=6,
        total_due=10_100_000,
        amount_out=10_000_000,
        total_in_usd=total_usd,
        fees_in_usd=fees_usd,
        metadata='{"order": "A-1"}',
    )


def test_usd_at_the_quote_of_each_side() -> None:
    ref = intent()
    assert usd_at_quote(ref, SOURCE, USDC, 10_100_000) == "10.10"
    assert usd_at_quote(ref, SOURCE, USDC, 100_000) == "0.10"
    assert usd_at_quote(ref, SOURCE, USDC, 101_000) == "0.101"
    assert usd_at_quote(ref, DESTINATION, USDC_OUT, 10_000_000) == "10.00"
    assert usd_at_quote(ref, SOURCE, NATIVE, 10**18) == ""  # no quote for ETH
    assert usd_at_quote(intent(total_usd=None), SOURCE, USDC, 1) == ""


@given(
    st.integers(0, 10**30),
    st.integers(1, 10**30),
    st.decimals(min_value=0, max_value=10**12, places=8, allow_nan=False),
)
def test_usd_is_exact_to_a_millionth_half_to_even(amount: int, total: int, usd: Decimal) -> None:
    ref = replace(intent(total_usd=usd), total_due=total)
    exact = Fraction(amount) * Fraction(usd) / total * 10**6
    floor = exact.numerator // exact.denominator
    rest = exact - floor
    want = floor + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2) else 0)
    text = usd_at_quote(ref, SOURCE, USDC, amount)
    whole, _, fraction = text.partition(".")
    assert int(whole) * 10**6 + int(fraction.ljust(6, "0")) == want
    assert 2 <= len(fraction) <= 6


# --- rows ----------------------------------------------------------------------------


def test_a_row_has_every_column_in_whole_units_and_links() -> None:
    book = TokenBook(report_settings())
    ref = intent()
    movement = Movement(
        MovementKind.DEPOSIT,
        datetime(2026, 11, 1, 10, 0, 0, 123456, tzinfo=UTC),
        ref,
        SOURCE,
        USDC,
        "0x" + "6" * 40,
        ref.address,
        10_100_000,
        "credited",
        "0x" + "ab" * 32,
        120,
    )
    row = dict(zip(COLUMNS, render_row(movement, book), strict=True))
    assert row["at"] == "2026-11-01T10:00:00.123456Z"
    assert (row["mode"], row["symbol"], row["decimals"]) == ("test", "USDC", "6")
    assert (row["amount_base_units"], row["amount"], row["usd"]) == ("10100000", "10.1", "10.10")
    assert row["explorer_url"] == "https://sepolia.basescan.org/tx/0x" + "ab" * 32
    assert row["metadata"] == '{"order": "A-1"}' and row["gas_used"] == ""


# --- signed bytes --------------------------------------------------------------------


@given(st.integers(0, 2**256 - 1), st.integers(0, 2**40))
def test_the_transfer_is_read_back_from_the_bytes_the_signer_records(
    amount: int, nonce: int
) -> None:
    recipient, token = "0x" + "4" * 40, USDC
    fees = Fees(2 * 10**9, 10**8)
    plan = TxPlan(Purpose.TRANSFER, token, 0, erc20_transfer_data(recipient, amount), 65_000, fees)
    signed = sign(plan, chain_id=84532, nonce=nonce, private_key=b"\x01" * 32)
    decoded = decode(signed.raw)
    assert decoded is not None
    found = transfer_of(decoded)
    assert (found.token, found.recipient, found.amount) == (token, recipient, amount)
    native = TxPlan(Purpose.TRANSFER, recipient, amount, b"", 21_000, fees)
    decoded = decode(sign(native, chain_id=1, nonce=nonce, private_key=b"\x01" * 32).raw)
    assert decoded is not None
    assert transfer_of(decoded) == type(found)(NATIVE, recipient, amount)


@pytest.mark.parametrize(
    "raw", [b"", b"\x02", b"\x01\xc0", b"\x02\xc0", b"\x02\xf8\xff", b"\x02\xc2\x80"]
)
def test_bytes_that_are_not_a_type_2_transaction_decode_to_none(raw: bytes) -> None:
    assert decode(raw) is None
