"""``/console/api/audit``: the Audit log page, filtered, a page at a time, and its CSV
export (streamed from one snapshot: memory stays bounded whatever the log's size).

Pages go newest first by cursor (``next_cursor``, passed back as ``cursor``); a record
whose transaction commits after a page was read is never skipped by the cursor: it
sorts above that page (``adapters.postgres.audit_log``)."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response, StreamingResponse

from intentd.access.roles import Permission
from intentd.adapters.postgres import audit_log
from intentd.adapters.postgres.audit_log import AuditFilter, AuditPosition, AuditRow
from intentd.api.context import Services, json_response
from intentd.api.paging import decode_cursor, encode_cursor, parse_time
from intentd.console.auth import ConsoleUser, Require
from intentd.console.web import CONSOLE_API

__all__ = ["CSV_COLUMNS", "router"]

CURSOR_TAG = "a"

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)
Reader = Annotated[ConsoleUser, Depends(Require(Permission.AUDIT_READ))]
_Text = Annotated[str | None, Query(min_length=1, max_length=200)]
CSV_COLUMNS = (
    "id",
    "at",
    "actor_kind",
    "actor_id",
    "actor_label",
    "action",
    "object_kind",
    "object_id",
    "mode",
    "source",
    "result",
    "detail",
)


def _time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def render_row(row: AuditRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "at": _time(row.at),
        "actor_kind": row.actor_kind,
        "actor_id": row.actor_id,
        "actor_label": row.actor_label,
        "action": row.action,
        "object_kind": row.object_kind,
        "object_id": row.object_id,
        "mode": row.mode,
        "source": row.source,
        "result": row.result,
        "detail": row.detail,
    }


def _filter(
    user: ConsoleUser,
    *,
    actor: str | None,
    action: str | None,
    object_id: str | None,
    result: str | None,
    since: str | None,
    until: str | None,
) -> AuditFilter:
    return AuditFilter(
        client_id=user.session.client_id,
        actor=actor,
        action=action,
        object_id=object_id,
        result=result,
        since=parse_time(since, "since"),
        until=parse_time(until, "until"),
    )


@router.get("/audit")
async def audit(
    request: Request,
    user: Reader,
    *,
    actor: _Text = None,
    action: _Text = None,
    object_id: _Text = None,
    result: _Text = None,
    since: Annotated[str | None, Query(max_length=64)] = None,
    until: Annotated[str | None, Query(max_length=64)] = None,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Response:
    services = Services.of(request)
    where = _filter(
        user,
        actor=actor,
        action=action,
        object_id=object_id,
        result=result,
        since=since,
        until=until,
    )
    before = None
    if cursor is not None:
        before = AuditPosition(*decode_cursor(CURSOR_TAG, cursor, 2))
    async with services.connection() as conn:
        found = await audit_log.page(conn, where, before=before, limit=limit + 1)
    page = found[:limit]
    last = page[-1][0] if len(found) > limit else None
    return json_response(
        {
            "data": [render_row(row) for _, row in page],
            "next_cursor": encode_cursor(CURSOR_TAG, last.tx_id, last.id) if last else None,
        }
    )


@router.get("/audit/export.csv")
async def export(
    request: Request,
    user: Reader,
    *,
    actor: _Text = None,
    action: _Text = None,
    object_id: _Text = None,
    result: _Text = None,
    since: Annotated[str | None, Query(max_length=64)] = None,
    until: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    services = Services.of(request)
    where = _filter(
        user,
        actor=actor,
        action=action,
        object_id=object_id,
        result=result,
        since=since,
        until=until,
    )

    async def lines() -> AsyncIterator[bytes]:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow(CSV_COLUMNS)
        async with services.connection() as conn:
            async for row in audit_log.stream(conn, where):
                values = render_row(row)
                values["detail"] = orjson.dumps(values["detail"]).decode()
                writer.writerow([_cell(values[c]) for c in CSV_COLUMNS])
                if buffer.tell() > 64 * 1024:
                    yield buffer.getvalue().encode()
                    buffer.seek(0)
                    buffer.truncate()
        yield buffer.getvalue().encode()

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return StreamingResponse(
        lines(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="audit-{stamp}.csv"'},
    )


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet will not run as a formula (OWASP CSV injection)."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
