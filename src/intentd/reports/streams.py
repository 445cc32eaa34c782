"""Reports as streams of bytes: what an HTTP response (or the console) sends, chunk by
chunk, while the reader yields rows.

No I/O of its own: it drives a :class:`~intentd.reports.ports.ReportReader`. Memory is
bounded by a chunk (about 64 KiB of CSV) and, for the reconciliation, one intent's
books plus the totals (one entry per chain and token): never by the number of rows.

- :func:`export_csv`: the header (:data:`~intentd.reports.movements.COLUMNS`), then one
  row per movement, oldest first.
- :func:`reconciliation_json`: ``{"from", "to", "mismatches": [...], "intents",
  "intents_with_mismatches", "by_status", "totals", "recipients", "reconciled"}``; the
  mismatches are written as they are found, the summary after them, and a newline every
  :data:`KEEP_ALIVE` intents meanwhile. Amounts are decimal strings of base units (they
  exceed JSON's safe integers).
- :func:`reconciliation_csv`: one row per intent and chain and token of its address
  (:data:`RECONCILIATION_COLUMNS`), with the checks that failed for that intent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import orjson

from intentd.reports.books import LedgerLine, Mismatch, Reconciled
from intentd.reports.cells import CHUNK_BYTES, CsvChunks
from intentd.reports.movements import COLUMNS, Export, TokenBook, render_row
from intentd.reports.ports import ReportReader, ReportScope
from intentd.reports.ranges import ReportRange, iso_utc
from intentd.reports.reconciliation import reconcile

__all__ = [
    "LEDGER_FIELDS",
    "RECONCILIATION_COLUMNS",
    "Summary",
    "export_csv",
    "reconciliation_csv",
    "reconciliation_json",
]

LEDGER_FIELDS = (
    "received",
    "relayer_repaid",
    "fees_swept",
    "refunded",
    "gas_from_amount",
    "retained",
    "held",
)
KEEP_ALIVE = 1000
"""Intents reconciled between two chunks of the JSON at least (the first after the first
intent, so the first query's failure is still a problem document)."""
RECONCILIATION_COLUMNS = (
    "intent_id",
    "intent_address",
    "status",
    "mode",
    "chain",
    "token",
    "symbol",
    *LEDGER_FIELDS,
    "balanced",
    "recipient_due",
    "recipient_got",
    "mismatches",
)


async def export_csv(
    reader: ReportReader, export: Export, scope: ReportScope, period: ReportRange, book: TokenBook
) -> AsyncIterator[bytes]:
    """The CSV of ``export`` over ``period``, in chunks."""
    chunks = CsvChunks()
    chunks.add(COLUMNS)
    async for movement in reader.movements(export, scope, period):
        chunk = chunks.add(render_row(movement, book))
        if chunk is not None:
            yield chunk
    yield chunks.flush()


@dataclass
class Summary:
    """Totals of a reconciliation: a few entries per chain and token, whatever the count
    of intents."""

    intents: int = 0
    with_mismatches: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    totals: dict[tuple[str, str], LedgerLine] = field(default_factory=dict)
    recipients: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def add(self, result: Reconciled) -> None:
        terms = result.terms
        self.intents += 1
        self.with_mismatches += bool(result.mismatches)
        self.by_status[terms.status] += 1
        for line in result.lines:
            total = self.totals.setdefault(
                (line.chain, line.token), LedgerLine(line.chain, line.token)
            )
            for name in LEDGER_FIELDS:
                setattr(total, name, getattr(total, name) + getattr(line, name))
        due = terms.amount_out if terms.status == "COMPLETED" else 0
        paid = self.recipients.setdefault((terms.destination_chain, terms.token_out), [0, 0])
        paid[0] += due
        paid[1] += result.recipient_got

    def closing(self, book: TokenBook) -> dict[str, object]:
        """The summary fields that follow the mismatches."""
        return {
            "intents": self.intents,
            "intents_with_mismatches": self.with_mismatches,
            "by_status": dict(sorted(self.by_status.items())),
            "totals": [
                {
                    "chain": line.chain,
                    "token": line.token,
                    **_token(book, line.chain, line.token),
                    **{name: str(getattr(line, name)) for name in LEDGER_FIELDS},
                    "balanced": line.balanced,
                }
                for _, line in sorted(self.totals.items())
            ],
            "recipients": [
                {
                    "chain": chain,
                    "token": token,
                    **_token(book, chain, token),
                    "due": str(due),
                    "got": str(got),
                }
                for (chain, token), (due, got) in sorted(self.recipients.items())
            ],
            "reconciled": self.with_mismatches == 0,
        }


def _token(book: TokenBook, chain: str, token: str) -> dict[str, object]:
    found = book.token(chain, token)
    return {"symbol": found[0] if found else "", "decimals": found[1] if found else None}


def mismatch_json(mismatch: Mismatch, status: str) -> dict[str, object]:
    return {
        "intent_id": mismatch.intent_id,
        "intent_address": mismatch.intent_address,
        "status": status,
        "check": mismatch.check.value,
        "chain": mismatch.chain,
        "token": mismatch.token,
        "expected": None if mismatch.expected is None else str(mismatch.expected),
        "found": None if mismatch.found is None else str(mismatch.found),
        "detail": mismatch.detail,
    }


async def reconciliation_json(
    reader: ReportReader, scope: ReportScope, period: ReportRange, book: TokenBook
) -> AsyncIterator[bytes]:
    """The reconciliation of every intent that ended in ``period``, as one JSON object."""
    opening = orjson.dumps({"from": iso_utc(period.start), "to": iso_utc(period.end)})
    parts = [opening[:-1], b',"mismatches":[']
    size, first, count = 0, True, 0
    summary = Summary()
    async for books in reader.books(scope, period):
        result = reconcile(books)
        summary.add(result)
        for mismatch in result.mismatches:
            item = orjson.dumps(mismatch_json(mismatch, books.terms.status))
            parts.append(item if first else b"," + item)
            size += len(item) + 1
            first = False
        count += 1
        if size >= CHUNK_BYTES or count % KEEP_ALIVE == 1:
            # a newline (JSON whitespace) now and then: a client or proxy waiting for a
            # long reconciliation without a mismatch sees it is alive
            yield b"".join(parts) or b"\n"
            parts, size = [], 0
    closing = orjson.dumps(summary.closing(book))
    parts.append(b"]," + closing[1:])
    yield b"".join(parts)


async def reconciliation_csv(
    reader: ReportReader, scope: ReportScope, period: ReportRange, book: TokenBook
) -> AsyncIterator[bytes]:
    """One row per intent and chain and token of its address, in the order they ended."""
    chunks = CsvChunks()
    chunks.add(RECONCILIATION_COLUMNS)
    async for books in reader.books(scope, period):
        result = reconcile(books)
        terms = result.terms
        checks = " ".join(sorted({m.check.value for m in result.mismatches}))
        due = terms.amount_out if terms.status == "COMPLETED" else 0
        for line in result.lines:
            found = book.token(line.chain, line.token)
            row = [
                str(terms.id),
                terms.address,
                terms.status,
                book.mode(terms.source_chain),
                line.chain,
                line.token,
                found[0] if found else "",
                *(str(getattr(line, name)) for name in LEDGER_FIELDS),
                "yes" if line.balanced else "no",
                str(due),
                str(result.recipient_got),
                checks,
            ]
            chunk = chunks.add(row)
            if chunk is not None:
                yield chunk
    yield chunks.flush()
