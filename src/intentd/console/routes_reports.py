"""``/console/api/reports``: the Reports page's slot.

Reports (CSV exports, the reconciliation) are built as a service of their own with
their API routes (``GET /api/v1/reports/...``, scope ``reports:read``); this route is
where the console calls that service for the signed-in user's client and the screen's
mode once it is merged. Until then it answers 501 ``reports_unavailable`` and the page
says so.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from intentd.access.roles import Permission
from intentd.api.problems import ApiProblem
from intentd.console.auth import ConsoleUser, Require
from intentd.console.web import CONSOLE_API, ModeParam

__all__ = ["router"]

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)
Reader = Annotated[ConsoleUser, Depends(Require(Permission.REPORTS_READ))]


@router.get("/reports")
async def reports(request: Request, user: Reader, mode: ModeParam = "test") -> Response:
    # Wire the reports service here: list the reports the client can run in this
    # mode, and link each CSV export and the reconciliation (the same service the
    # /api/v1/reports routes call), passing user.session.client_id and mode.
    raise ApiProblem(501, "reports_unavailable", "reports are not available on this version yet")
