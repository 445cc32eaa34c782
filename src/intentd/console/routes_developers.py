"""``/console/api`` keys and events: the Developers page.

Keys are listed with their scopes (``all`` for a key without any, which may do
everything) and made with scopes and the screen's mode; the secret is in the answer
of the create, once. Revoking takes effect on every API replica within
``api.key_cache_ttl``. The event log is ``GET /api/v1/events`` for the screen's mode.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from intentd.access.roles import Permission
from intentd.access.scopes import Scope, parse_scopes
from intentd.adapters.postgres import api_keys, clients, event_log
from intentd.adapters.postgres.api_keys import ApiKey
from intentd.adapters.postgres.event_log import EventFilter
from intentd.api.context import Services, json_response, read_body
from intentd.api.events.params import decode_log_cursor, encode_log_cursor, parse_types
from intentd.api.problems import ApiProblem
from intentd.console.auth import ConsoleUser, Require
from intentd.console.web import CONSOLE_API, ModeParam
from intentd.merchant.keys import create_key, revoke_key

__all__ = ["render_key", "router"]

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)
KeyReader = Annotated[ConsoleUser, Depends(Require(Permission.KEYS_READ))]
KeyWriter = Annotated[ConsoleUser, Depends(Require(Permission.KEYS_WRITE))]
EventReader = Annotated[ConsoleUser, Depends(Require(Permission.EVENTS_READ))]


def render_key(key: ApiKey) -> dict[str, Any]:
    return {
        "id": str(key.id),
        "prefix": key.prefix,
        "mode": key.mode,
        "scopes": sorted(key.scopes) if key.scopes is not None else None,
        "rate_limit": key.rate_limit,
        "created_at": key.created_at.isoformat().replace("+00:00", "Z"),
        "revoked_at": key.revoked_at.isoformat().replace("+00:00", "Z") if key.revoked_at else None,
    }


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    scopes: list[str] | None = Field(
        default=None, max_length=len(Scope), description="null: every scope"
    )


@router.get("/keys")
async def list_keys(request: Request, user: KeyReader, mode: ModeParam = "test") -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        found = await api_keys.list_keys(conn, user.session.client_id)
    return json_response(
        {
            "data": [render_key(k) for k in reversed(found) if k.mode == mode],
            "scopes": [s.value for s in Scope],
        }
    )


@router.post("/keys")
async def create(request: Request, user: KeyWriter, mode: ModeParam = "test") -> Response:
    services = Services.of(request)
    body = await read_body(request, KeyCreate)
    try:
        scopes = frozenset(parse_scopes(body.scopes)) if body.scopes is not None else None
    except ValueError as exc:
        raise ApiProblem(422, "unknown_scope", str(exc), field="scopes") from None
    async with services.connection() as conn:
        client = await clients.find(conn, str(user.session.client_id))
        assert client is not None
        key, secret = await create_key(
            conn, user.actor(), client, mode=mode, scopes=scopes, rate_limit=None
        )
    return json_response({**render_key(key), "api_key": secret}, 201)


@router.post("/keys/{key_id}/revoke")
async def revoke(request: Request, user: KeyWriter, key_id: Annotated[UUID, Path()]) -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        revoked = await revoke_key(conn, user.actor(), key_id, client_id=user.session.client_id)
    if revoked is None:
        raise ApiProblem(404, "key_not_found", f"no key {key_id} for this client")
    return json_response(render_key(revoked))


@router.get("/events")
async def events(
    request: Request,
    user: EventReader,
    mode: ModeParam = "test",
    *,
    event_type: Annotated[str | None, Query(alias="type", max_length=200)] = None,
    intent_id: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
    cursor: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
) -> Response:
    services = Services.of(request)
    where = EventFilter(
        client_id=user.session.client_id,
        modes=[mode],
        types=parse_types([event_type] if event_type else ()),
        intent_id=intent_id,
    )
    after = decode_log_cursor(cursor)
    async with services.connection() as conn:
        found = await event_log.page(conn, where, after=after, descending=True, limit=limit + 1)
    page = found[:limit]
    return json_response(
        {
            "data": [e.body for e in page],
            "next_cursor": encode_log_cursor(page[-1].at) if len(found) > limit else None,
        }
    )
