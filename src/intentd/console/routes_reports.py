"""``/console/api/reports``: the Reports page, over the reports service.

The page downloads the same exports and reconciliation as ``GET /api/v1/reports/...``
(docs/api.md, Reports), computed by the same code (``reports.streams`` through
``api.reports.responses.open_stream``: one snapshot, bounded memory, a refusal or a
failure of the first query answered as a problem, never as a broken 200), for the
signed-in user's client and the screen's mode: a :class:`~intentd.reports.ports.ReportScope`
of the source chains of that network class, as a key of that mode sees them. Every role
with ``reports.read`` may read them.

Reading a report changes nothing, so it is not written to the audit log (the console's
rule: the log records changes, as the audit log's own export is not recorded).

- ``GET /reports``: what the page offers (the exports, the longest range);
- ``GET /reports/reconciliation``: the reconciliation, JSON (the page shows it) or CSV;
- ``GET /reports/{export}``: one export as CSV (the page's download links).

The range is ``from`` (inclusive) to ``to`` (exclusive), RFC 3339 with a zone;
400 ``invalid_time``, ``range_reversed``, ``range_too_long`` (``reports.ranges``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.responses import Response

from intentd.access.roles import Permission
from intentd.api.context import Services, json_response
from intentd.api.problems import ApiProblem
from intentd.api.reports.responses import ReportStream, open_stream
from intentd.console.auth import ConsoleUser, Require
from intentd.console.web import CONSOLE_API, ModeParam, mode_chains
from intentd.reports.movements import Export, TokenBook
from intentd.reports.ports import ReportReader, ReportScope
from intentd.reports.ranges import MAX_RANGE, RangeError, ReportRange, parse_range
from intentd.reports.streams import export_csv, reconciliation_csv, reconciliation_json

__all__ = ["router"]

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)
Reader = Annotated[ConsoleUser, Depends(Require(Permission.REPORTS_READ))]
From = Annotated[str, Query(alias="from", max_length=64)]
To = Annotated[str, Query(alias="to", max_length=64)]


def _scope(request: Request, user: ConsoleUser, mode: str) -> ReportScope:
    """The user's client's intents on the source chains of the screen's mode."""
    settings = Services.of(request).settings
    return ReportScope(user.client_id, tuple(mode_chains(settings, mode)))


def _range(start: str, end: str) -> ReportRange:
    try:
        return parse_range(start, end)
    except RangeError as exc:
        raise ApiProblem(400, exc.code, str(exc), field=exc.field) from None


@router.get("/reports")
async def reports(request: Request, user: Reader, mode: ModeParam = "test") -> Response:
    return json_response(
        {
            "mode": mode,
            "exports": [kind.value for kind in Export],
            "max_range_days": MAX_RANGE.days,
            "chains": mode_chains(Services.of(request).settings, mode),
        }
    )


@router.get("/reports/reconciliation")
async def reconciliation(
    request: Request,
    user: Reader,
    *,
    start: From,
    end: To,
    mode: ModeParam = "test",
    format: Literal["json", "csv"] = "json",
) -> ReportStream:
    period = _range(start, end)
    scope = _scope(request, user, mode)
    book = TokenBook(Services.of(request).settings)

    def make(reader: ReportReader) -> AsyncIterator[bytes]:
        if format == "csv":
            return reconciliation_csv(reader, scope, period, book)
        return reconciliation_json(reader, scope, period, book)

    name = f"reconciliation_{mode}_{period.label()}.{format}"
    media = "text/csv" if format == "csv" else "application/json"
    return await open_stream(request, make, filename=name, media_type=media)


@router.get("/reports/{export}")
async def export(
    request: Request,
    user: Reader,
    *,
    kind: Annotated[Export, Path(alias="export")],
    start: From,
    end: To,
    mode: ModeParam = "test",
) -> ReportStream:
    period = _range(start, end)
    scope = _scope(request, user, mode)
    book = TokenBook(Services.of(request).settings)

    def make(reader: ReportReader) -> AsyncIterator[bytes]:
        return export_csv(reader, kind, scope, period, book)

    name = f"{kind.value}_{mode}_{period.label()}.csv"
    return await open_stream(request, make, filename=name)
