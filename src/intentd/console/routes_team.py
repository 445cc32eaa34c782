"""``/console/api/team`` and ``/console/api/policy``: the Team page (owners change it;
admins read it) and the client's refund approval threshold."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from intentd.access.roles import Permission, Role
from intentd.adapters.postgres import console_users, refund_approvals
from intentd.adapters.postgres.console_users import User, UserExists
from intentd.api.context import Services, json_response, read_body
from intentd.api.problems import ApiProblem
from intentd.console.auth import ConsoleUser, Require
from intentd.console.state import ConsoleState
from intentd.console.web import CONSOLE_API
from intentd.merchant import team

__all__ = ["render_user", "router"]

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)
TeamReader = Annotated[ConsoleUser, Depends(Require(Permission.TEAM_READ))]
TeamWriter = Annotated[ConsoleUser, Depends(Require(Permission.TEAM_WRITE))]
PolicyReader = Annotated[ConsoleUser, Depends(Require(Permission.PAYMENTS_READ))]
PolicyWriter = Annotated[ConsoleUser, Depends(Require(Permission.SETTINGS_WRITE))]
UserId = Annotated[UUID, Path()]


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def render_user(user: User) -> dict[str, Any]:
    return {
        "id": str(user.id),
        "email": user.email,
        "role": user.role.value,
        "active": user.active,
        "has_password": user.has_password,
        "totp_on": user.totp_on,
        "created_at": _time(user.created_at),
        "disabled_at": _time(user.disabled_at),
    }


class Invite(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    email: str = Field(min_length=3, max_length=254, pattern=r"^[^@\s]+@[^@\s]+$")
    role: Role = Field(strict=False)


class RoleChange(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    role: Role = Field(strict=False)


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    refund_approval_above_usd: str | None = Field(
        max_length=40, description="a decimal USD amount; null: no approval"
    )


def _base(request: Request) -> str:
    configured = Services.of(request).settings.console.public_url
    return configured or str(request.base_url).rstrip("/")


async def _user(services: Services, user: ConsoleUser, user_id: UUID) -> User:
    async with services.connection() as conn:
        found = await console_users.get(conn, user_id, user.session.client_id)
    if found is None:
        raise ApiProblem(404, "user_not_found", f"no user {user_id} in this team")
    return found


@router.get("/team")
async def list_team(request: Request, user: TeamReader) -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        found = await console_users.list_users(conn, user.session.client_id)
    return json_response(
        {"data": [render_user(u) for u in found], "roles": [r.value for r in Role]}
    )


@router.post("/team")
async def invite(request: Request, user: TeamWriter) -> Response:
    services = Services.of(request)
    body = await read_body(request, Invite)
    state = ConsoleState.of(request)
    try:
        async with services.connection() as conn:
            created, token = await team.invite(
                conn,
                user.actor(),
                user.session.client_id,
                body.email,
                body.role,
                now=datetime.now(UTC),
                lifetime=state.link_lifetime,
            )
    except UserExists as exc:
        raise ApiProblem(409, "user_exists", str(exc), field="email") from None
    return json_response(
        {"user": render_user(created), "signin_link": team.link_url(_base(request), token)}, 201
    )


@router.patch("/team/{user_id}")
async def change_role(request: Request, user: TeamWriter, user_id: UserId) -> Response:
    services = Services.of(request)
    body = await read_body(request, RoleChange)
    target = await _user(services, user, user_id)
    try:
        async with services.connection() as conn:
            changed = await team.set_role(conn, user.actor(), target, body.role)
    except team.LastOwner as exc:
        raise ApiProblem(409, "last_owner", str(exc)) from None
    return json_response(render_user(changed))


@router.post("/team/{user_id}/disable")
async def disable(request: Request, user: TeamWriter, user_id: UserId) -> Response:
    services = Services.of(request)
    target = await _user(services, user, user_id)
    try:
        async with services.connection() as conn:
            changed = await team.disable(conn, user.actor(), target)
    except team.LastOwner as exc:
        raise ApiProblem(409, "last_owner", str(exc)) from None
    return json_response(render_user(changed))


@router.post("/team/{user_id}/enable")
async def enable(request: Request, user: TeamWriter, user_id: UserId) -> Response:
    services = Services.of(request)
    target = await _user(services, user, user_id)
    async with services.connection() as conn:
        changed = await team.enable(conn, user.actor(), target)
    return json_response(render_user(changed))


@router.post("/team/{user_id}/link")
async def signin_link(request: Request, user: TeamWriter, user_id: UserId) -> Response:
    services = Services.of(request)
    target = await _user(services, user, user_id)
    async with services.connection() as conn:
        token = await team.new_link(
            conn,
            user.actor(),
            target,
            now=datetime.now(UTC),
            lifetime=ConsoleState.of(request).link_lifetime,
        )
    return json_response({"signin_link": team.link_url(_base(request), token)})


@router.get("/policy")
async def policy(request: Request, user: PolicyReader) -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        own, value = await refund_approvals.threshold(conn, user.session.client_id)
    if not own:
        value = services.settings.console.refund_approval_above_usd
    return json_response(
        {
            "refund_approval_above_usd": str(value) if value is not None else None,
            "own": own,
            "approval_ttl_hours": services.settings.console.approval_ttl_hours,
        }
    )


@router.put("/policy")
async def set_policy(request: Request, user: PolicyWriter) -> Response:
    services = Services.of(request)
    body = await read_body(request, Policy)
    value: Decimal | None = None
    if body.refund_approval_above_usd is not None:
        try:
            value = Decimal(body.refund_approval_above_usd)
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite() or value < 0:
            raise ApiProblem(
                422,
                "invalid_threshold",
                "give a USD amount such as 500, or null for no approval",
                field="refund_approval_above_usd",
            )
    async with services.connection() as conn:
        await team.set_threshold(conn, user.actor(), value)
    return json_response({"refund_approval_above_usd": str(value) if value is not None else None})
