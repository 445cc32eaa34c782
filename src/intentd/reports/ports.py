"""What the reports read: one port, with a fake beside it in the tests
(``tests/unit/reports/test_report_streams.py``); the PostgreSQL reader is
``adapters.postgres.report_queries``.

Both reads are async iterators over one database snapshot, yielding rows as they are
read a page at a time: a caller holds one row, or one batch of intents, at a time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from intentd.reports.books import IntentBooks
from intentd.reports.movements import Export, Movement
from intentd.reports.ranges import ReportRange

__all__ = ["ReportReader", "ReportScope"]


@dataclass(frozen=True, slots=True)
class ReportScope:
    """Whose data: one client's intents paid on these source chains (the chains its key,
    or the console's mode, may see: test and live data are never mixed by accident)."""

    client_id: UUID
    source_chains: tuple[str, ...]


class ReportReader(Protocol):
    def movements(
        self, export: Export, scope: ReportScope, period: ReportRange
    ) -> AsyncIterator[Movement]:
        """The movements of ``export``'s kinds in ``period``, oldest first."""
        ...

    def books(self, scope: ReportScope, period: ReportRange) -> AsyncIterator[IntentBooks]:
        """The books of every intent that ended in ``period``, in the order they ended."""
        ...
