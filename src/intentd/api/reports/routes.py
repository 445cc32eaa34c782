"""``/api/v1/reports``: CSV exports of every money movement over a date range, and the
reconciliation of the intents that ended in it (docs/api.md, Reports).

Every route takes an API key and reports only the key's client's intents on the source
chains its key may use (the rule of ``GET /intents``: a live key sees live data only).
The range is ``from`` (inclusive) to ``to`` (exclusive), RFC 3339 with a zone, at most
366 days (``reports.ranges``; 400 ``invalid_time``, ``range_reversed``,
``range_too_long``). Bodies stream from one database snapshot in bounded memory
(``api.reports.responses``: 503 ``reports_busy`` when this process streams its share
already). Restricted keys need the scope ``reports:read``: every operation under
``/api/v1/reports`` is one scope, checked where the key is (``access.scopes``). The
console's Reports page streams the same reports (``console.routes_reports``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from intentd.api.callers.auth import Caller
from intentd.api.callers.security import ApiCaller, errors
from intentd.api.context import API_PREFIX, Services
from intentd.api.intents.listing import usable_chains
from intentd.api.problems import PROBLEM_JSON, ApiProblem
from intentd.api.reports.responses import (
    ReconciliationReport,
    ReportStream,
    csv_content,
    open_stream,
)
from intentd.reports.movements import COLUMNS, Export, TokenBook
from intentd.reports.ports import ReportReader, ReportScope
from intentd.reports.ranges import MAX_RANGE, RangeError, ReportRange, parse_range
from intentd.reports.streams import (
    RECONCILIATION_COLUMNS,
    export_csv,
    reconciliation_csv,
    reconciliation_json,
)

__all__ = ["router"]

router = APIRouter(prefix=API_PREFIX, tags=["reports"])

_TIME = {"format": "date-time"}
From = Annotated[
    str,
    Query(
        alias="from",
        max_length=64,
        json_schema_extra=_TIME,
        description="start of the range, inclusive (RFC 3339 with a zone)",
    ),
]
To = Annotated[
    str,
    Query(
        alias="to",
        max_length=64,
        json_schema_extra=_TIME,
        description=f"end of the range, exclusive; at most {MAX_RANGE.days} days after from",
    ),
]


class _ReconciliationJson(JSONResponse):
    """Only documents the reconciliation's JSON (``response_model``); the route answers a
    streamed :class:`ReportStream`, in JSON or CSV."""


def _responses(csv: str) -> dict[int | str, Any]:
    """The answers of a report route: the report (200), or a problem document. The
    problems are spelled out: FastAPI would put a ``model`` under the route's own media
    type (``text/csv``)."""
    answers = errors(503)
    answers[503]["description"] = (
        "reports_busy (this process streams its share of reports already), database_busy,"
        " overloaded: retry after Retry-After"
    )
    answers[400]["description"] = "invalid_time, range_reversed, range_too_long, validation_error"
    problem = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for answer in answers.values():
        del answer["model"]
        answer["content"] = problem
    return {200: csv_content(csv), **answers}


def _scope(request: Request, caller: Caller) -> ReportScope:
    """Whose data the caller may read: its client's intents on the source chains its key
    may use."""
    settings = Services.of(request).settings
    return ReportScope(caller.client_id, tuple(usable_chains(settings, caller)))


def _range(start: str, end: str) -> ReportRange:
    try:
        return parse_range(start, end)
    except RangeError as exc:
        raise ApiProblem(400, exc.code, str(exc), field=exc.field) from None


@router.get(
    "/reports/reconciliation",
    response_class=_ReconciliationJson,
    response_model=ReconciliationReport,
    responses=_responses(
        "format=json: the mismatches and totals; format=csv: one row per intent and chain"
        " and token of its address, columns " + ", ".join(RECONCILIATION_COLUMNS)
    ),
    summary="Reconcile every intent that ended in [from, to) against its recorded transactions",
)
async def reconciliation(
    request: Request,
    caller: ApiCaller,
    start: From,
    end: To,
    format: Annotated[
        Literal["json", "csv"], Query(description="json (default): mismatches and totals")
    ] = "json",
) -> ReportStream:
    period = _range(start, end)
    scope = _scope(request, caller)
    book = TokenBook(Services.of(request).settings)

    def make(reader: ReportReader) -> Any:
        if format == "csv":
            return reconciliation_csv(reader, scope, period, book)
        return reconciliation_json(reader, scope, period, book)

    name = f"reconciliation_{period.label()}.{format}"
    media = "text/csv" if format == "csv" else "application/json"
    return await open_stream(request, make, filename=name, media_type=media)


@router.get(
    "/reports/{export}",
    response_class=ReportStream,
    status_code=200,
    responses=_responses("one row per money movement, oldest first; columns " + ", ".join(COLUMNS)),
    summary="Export the client's money movements of one kind in [from, to) as CSV",
)
async def export(
    request: Request,
    caller: ApiCaller,
    kind: Annotated[
        Export,
        Path(
            alias="export",
            description="payments (recipient paid, relayer repaid), deposits, refunds, fees,"
            " gas (every mined transaction's gas, and gas top-ups)",
        ),
    ],
    start: From,
    end: To,
) -> ReportStream:
    period = _range(start, end)
    scope = _scope(request, caller)
    book = TokenBook(Services.of(request).settings)

    def make(reader: ReportReader) -> Any:
        return export_csv(reader, kind, scope, period, book)

    return await open_stream(request, make, filename=f"{kind.value}_{period.label()}.csv")
