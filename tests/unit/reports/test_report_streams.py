"""The reports as bytes, over a fake reader: whole documents from bounded chunks."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from uuid import UUID

import orjson
from tests.unit.reports.world import (
    ADDRESS,
    DESTINATION,
    SOURCE,
    USDC,
    USDC_OUT,
    new_world,
    report_settings,
)

from intentd.api.reports.responses import ReconciliationReport
from intentd.reports.books import IntentBooks
from intentd.reports.cells import CHUNK_BYTES
from intentd.reports.movements import COLUMNS, Export, IntentRef, Movement, MovementKind, TokenBook
from intentd.reports.ports import ReportScope
from intentd.reports.ranges import ReportRange
from intentd.reports.streams import (
    RECONCILIATION_COLUMNS,
    export_csv,
    reconciliation_csv,
    reconciliation_json,
)

SCOPE = ReportScope(UUID(int=1), (SOURCE,))
PERIOD = ReportRange(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
REF = IntentRef(
    1, ADDRESS, SOURCE, DESTINATION, USDC, USDC_OUT, "USDC", 6, 6, 1_010_000, 1_000_000,
    Decimal("1.01"), Decimal("0.01"), "{}",
)  # fmt: skip


@dataclass
class FakeReader:
    """A ``ReportReader`` over lists; it records what it was asked."""

    moved: list[Movement]
    books_list: list[IntentBooks]
    asked: list[tuple[object, ...]]

    async def movements(
        self, export: Export, scope: ReportScope, period: ReportRange
    ) -> AsyncIterator[Movement]:
        self.asked.append((export, scope, period))
        for movement in self.moved:
            yield movement

    async def books(self, scope: ReportScope, period: ReportRange) -> AsyncIterator[IntentBooks]:
        self.asked.append((scope, period))
        for books in self.books_list:
            yield books


async def gather(chunks: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in chunks]


def deposit(n: int) -> Movement:
    at = PERIOD.start + timedelta(seconds=n)
    return Movement(
        MovementKind.DEPOSIT, at, REF, SOURCE, USDC, "0x" + "6" * 40, ADDRESS, 1_010_000,
        "credited", f"0x{n:064x}", n,
    )  # fmt: skip


async def test_an_export_is_its_header_and_one_row_per_movement_in_bounded_chunks() -> None:
    reader = FakeReader([deposit(n) for n in range(5_000)], [], [])
    chunks = await gather(
        export_csv(reader, Export.DEPOSITS, SCOPE, PERIOD, TokenBook(report_settings()))
    )
    assert reader.asked == [(Export.DEPOSITS, SCOPE, PERIOD)]
    assert len(chunks) > 10 and max(len(c) for c in chunks) < CHUNK_BYTES + 2_000
    rows = list(csv.reader(io.StringIO(b"".join(chunks).decode(), newline="")))
    assert rows[0] == list(COLUMNS) and len(rows) == 5_001
    assert rows[1][COLUMNS.index("usd")] == "1.01"
    assert rows[-1][COLUMNS.index("block_number")] == "4999"


def settled() -> IntentBooks:
    world = new_world(native=False, total=1_000_000, fees=10_000)
    world.pay(1_000_000)
    world.act("sent")
    world.act("confirmed")
    for index in range(len(world.actions)):
        world.execute(index, gas_used=5, price=2)
    return world.books()


async def test_the_reconciliation_json_lists_mismatches_then_totals() -> None:
    good = settled()
    bad = replace(good, terms=replace(good.terms, id=2, received=good.terms.received + 1))
    reader = FakeReader([], [good, bad, good], [])
    body = b"".join(
        await gather(reconciliation_json(reader, SCOPE, PERIOD, TokenBook(report_settings())))
    )
    report = orjson.loads(body)
    ReconciliationReport.model_validate(report)
    assert (report["from"], report["to"]) == ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    assert {m["intent_id"] for m in report["mismatches"]} == {2}
    assert {m["check"] for m in report["mismatches"]} == {"credited_total", "address_balance"}
    assert (report["intents"], report["intents_with_mismatches"]) == (3, 1)
    assert report["by_status"] == {"COMPLETED": 3} and report["reconciled"] is False
    [total] = report["totals"]
    assert (total["symbol"], total["relayer_repaid"], total["fees_swept"]) == (
        "USDC",
        "2970000",
        "30000",
    )
    assert report["recipients"] == [
        {
            "chain": DESTINATION,
            "token": USDC_OUT,
            "symbol": "USDC",
            "decimals": 6,
            "due": "2970000",
            "got": "2970000",
        }
    ]


async def test_the_reconciliation_of_nothing_is_reconciled() -> None:
    reader = FakeReader([], [], [])
    book = TokenBook(report_settings())
    report = orjson.loads(b"".join(await gather(reconciliation_json(reader, SCOPE, PERIOD, book))))
    assert (report["mismatches"], report["intents"], report["reconciled"]) == ([], 0, True)


async def test_the_reconciliation_csv_has_a_row_per_intent_and_token() -> None:
    good = settled()
    bad = replace(good, terms=replace(good.terms, id=2, refunded=1))
    reader = FakeReader([], [good, bad], [])
    body = b"".join(
        await gather(reconciliation_csv(reader, SCOPE, PERIOD, TokenBook(report_settings())))
    )
    rows = list(csv.DictReader(io.StringIO(body.decode(), newline="")))
    assert list(rows[0]) == list(RECONCILIATION_COLUMNS)
    assert [(r["intent_id"], r["balanced"], r["mismatches"]) for r in rows] == [
        ("1", "yes", ""),
        ("2", "no", "address_balance credit_refunds retained"),
    ]
    assert (rows[0]["received"], rows[0]["recipient_got"], rows[0]["mode"]) == (
        "1000000",
        "990000",
        "test",
    )
