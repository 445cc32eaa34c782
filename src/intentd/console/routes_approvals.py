"""``/console/api/approvals``: refunds waiting for a second user, and their decision.

Guarantees: a user sees only their client's approvals of the screen's mode (stale ones
expire as they are read); one with ``refunds.approve`` decides, never the user who
asked (403 ``approval_own_request``); approving runs the refund as
:func:`~intentd.merchant.approval_decisions.approve` does, and a refund the intent no longer
allows is the same 409 as a refund asked for directly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from intentd.access.approvals import ApprovalStatus
from intentd.access.roles import Permission
from intentd.adapters.postgres import refund_approvals
from intentd.api.context import Services, json_response
from intentd.api.intents.commands import refused_problem
from intentd.api.intents.refund_approvals import render_approval
from intentd.api.problems import ApiProblem
from intentd.console.auth import ConsoleUser, Require
from intentd.console.web import CONSOLE_API, ModeParam
from intentd.contract.record import render_record
from intentd.lifecycle import commands
from intentd.merchant import approval_decisions

__all__ = ["router"]

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)
Reader = Annotated[ConsoleUser, Depends(Require(Permission.PAYMENTS_READ))]
Approver = Annotated[ConsoleUser, Depends(Require(Permission.REFUNDS_APPROVE))]


def _now() -> datetime:
    return datetime.now(UTC)


@router.get("/approvals")
async def approvals(
    request: Request,
    user: Reader,
    mode: ModeParam = "test",
    status: Annotated[ApprovalStatus | None, Query()] = None,
) -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        await refund_approvals.expire_stale(conn, _now(), client_id=user.session.client_id)
        found = await refund_approvals.list_approvals(
            conn, user.session.client_id, [mode], status=status, limit=200
        )
    return json_response({"data": [render_approval(a) for a in found]})


def _denied(exc: approval_decisions.ApprovalDenied) -> ApiProblem:
    status = 404 if exc.code == "approval_not_found" else 409
    if exc.code == "approval_own_request":
        status = 403
    return ApiProblem(status, exc.code, exc.detail)


@router.post("/approvals/{approval_id}/approve")
async def approve(request: Request, user: Approver, approval_id: UUID) -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        try:
            done = await approval_decisions.approve(
                conn, services.intent_commands, user.actor(), approval_id, now=_now()
            )
        except approval_decisions.ApprovalDenied as exc:
            raise _denied(exc) from None
        except commands.CommandRefused as refused:
            found = await refund_approvals.get(conn, approval_id, user.session.client_id)
            command = commands.Command(found.command if found else "refund")
            address = found.intent_address if found else "?"
            raise refused_problem(command, address, refused) from None
    assert done.approval is not None
    return json_response(
        {"approval": render_approval(done.approval), "record": render_record(done.answer.row)}
    )


@router.post("/approvals/{approval_id}/reject")
async def reject(request: Request, user: Approver, approval_id: UUID) -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        try:
            rejected = await approval_decisions.reject(conn, user.actor(), approval_id, now=_now())
        except approval_decisions.ApprovalDenied as exc:
            raise _denied(exc) from None
    return json_response({"approval": render_approval(rejected)})
