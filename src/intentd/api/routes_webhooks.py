"""``/api/v1/webhooks``: a client's webhook endpoints, their attempts, redelivery.

An endpoint belongs to the caller's client and to the mode of the caller's key (a
``test`` key sees only test endpoints). Its URL is checked at registration and at
each change (``webhooks.targets``; a name is resolved and every address checked) and
again by the dispatcher at connect time. The secret is answered once, by the create
and rotate calls. Without ``INTENTD_WEBHOOK_KEY`` the routes answer 503
``webhooks_disabled``.
"""

from __future__ import annotations

import asyncio
import base64
import socket
from datetime import datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Query, Request
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from intentd.adapters import webhook_endpoints as store
from intentd.adapters.webhook_endpoints import AttemptRow, Endpoint
from intentd.api.auth import Caller
from intentd.api.context import API_PREFIX, Services, json_response, read_body
from intentd.api.models import Problem
from intentd.api.problems import ApiProblem
from intentd.api.security import ApiCaller, errors
from intentd.api.webhook_models import (
    AttemptList,
    EndpointList,
    EndpointOut,
    Recovered,
    RecoverRequest,
    WebhookCreate,
    WebhookCreated,
    WebhookUpdate,
    body_schema,
)
from intentd.settings import ConfigError
from intentd.webhooks.role import secret_box
from intentd.webhooks.secret_box import SecretBox
from intentd.webhooks.targets import TargetRefused, check_url, refusal

__all__ = ["router"]


class _Route(APIRoute):
    """A route whose 405 answer's ``Allow`` lists every method of its path (several
    operations share ``/webhooks/{endpoint_id}``), not only its own."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.methods and scope["method"] not in self.methods:
            methods = sorted(
                {
                    method
                    for route in router.routes
                    if isinstance(route, APIRoute) and route.path == self.path
                    for method in route.methods or ()
                }
            )
            raise HTTPException(status_code=405, headers={"Allow": ", ".join(methods)})
        await super().handle(scope, receive, send)


router = APIRouter(prefix=API_PREFIX, tags=["webhooks"], route_class=_Route)
EndpointId = Annotated[UUID, Path(description="the endpoint's id")]
Limit = Annotated[int, Query(ge=1, le=100, description="items per page")]
Cursor = Annotated[
    str | None, Query(max_length=200, description="next_cursor of the previous page")
]
_RESOLVE_SECONDS = 5.0


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _render(endpoint: Endpoint) -> dict[str, Any]:
    return {
        "id": str(endpoint.id),
        "url": endpoint.url,
        "description": endpoint.description,
        "event_types": endpoint.event_types,
        "mode": endpoint.mode,
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason,
        "disabled_at": _time(endpoint.disabled_at),
        "failing_since": _time(endpoint.failing_since),
        "previous_secret_expires_at": _time(endpoint.previous_secret_expires_at),
        "created_at": _time(endpoint.created_at),
        "updated_at": _time(endpoint.updated_at),
    }


def _render_attempt(attempt: AttemptRow) -> dict[str, Any]:
    return {
        "id": attempt.id,
        "delivery_id": attempt.delivery_id,
        "event_id": attempt.event_id,
        "event_type": attempt.event_type,
        "delivery_status": attempt.delivery_status,
        "attempted_at": _time(attempt.attempted_at),
        "status_code": attempt.status_code,
        "latency_ms": attempt.latency_ms,
        "error": attempt.error,
        "response": attempt.response_head,
        "outcome": attempt.outcome,
        "next_attempt_at": _time(attempt.next_attempt_at),
    }


def _box(services: Services) -> SecretBox:
    try:
        return secret_box(services.settings)
    except ConfigError:
        raise ApiProblem(
            503, "webhooks_disabled", "webhooks are not configured on this deployment"
        ) from None


def _not_found(endpoint_id: UUID) -> ApiProblem:
    return ApiProblem(404, "webhook_not_found", f"no webhook endpoint {endpoint_id} for this key")


async def _checked_url(services: Services, caller: Caller, url: str) -> str:
    """``url`` if an endpoint of the caller's mode may use it; 422 problems otherwise."""
    allow_private = services.settings.webhooks.allow_private_targets
    try:
        target = check_url(url, caller.key.mode, allow_private=allow_private)
    except TargetRefused as exc:
        raise ApiProblem(422, exc.code, str(exc), field="url") from None
    if target.literal is not None or allow_private:
        return url
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM), _RESOLVE_SECONDS
        )
    except (OSError, TimeoutError):
        raise ApiProblem(
            422, "webhook_url_unresolvable", f"{target.host} does not resolve", field="url"
        ) from None
    for info in infos:
        address = str(info[4][0])
        why = refusal(address)
        if why is not None:
            raise ApiProblem(
                422,
                "webhook_url_forbidden",
                f"{target.host} resolves to {address}, a {why} address",
                field="url",
            )
    return url


async def _endpoint(services: Services, caller: Caller, endpoint_id: UUID) -> Endpoint:
    async with services.pool.acquire() as conn:
        endpoint = await store.get(conn, caller.client_id, caller.key.mode, endpoint_id)
    if endpoint is None:
        raise _not_found(endpoint_id)
    return endpoint


def _encode_cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        raise _bad_cursor() from None


def _bad_cursor() -> ApiProblem:
    return ApiProblem(
        400, "invalid_cursor", "cursor is not a next_cursor of this list", field="cursor"
    )


_OWN_DESCRIPTIONS = {
    404: "No such endpoint (or delivery) for this key's client and mode",
    409: "The endpoint is disabled (code webhook_disabled)",
    422: "The URL is refused (webhook_url_*), or a value is unusable",
    503: "Webhooks are not configured on this deployment (webhooks_disabled)",
}


def _responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI answers of an operation: the common ones plus ``statuses``."""
    shared = [s for s in statuses if s not in _OWN_DESCRIPTIONS]
    documented = errors(*shared)
    for status in (*statuses, 422):
        if status in _OWN_DESCRIPTIONS:
            documented[status] = {"model": Problem, "description": _OWN_DESCRIPTIONS[status]}
    return documented


@router.post(
    "/webhooks",
    status_code=201,
    response_model=WebhookCreated,
    responses=_responses(413, 415, 422, 503),
    summary="Register a webhook endpoint (the answer holds its secret, shown once)",
    openapi_extra=body_schema(WebhookCreate),
)
async def create(request: Request, caller: ApiCaller) -> Response:
    services = Services.of(request)
    body = await read_body(request, WebhookCreate)
    box = _box(services)
    url = await _checked_url(services, caller, body.url)
    async with services.pool.acquire() as conn:
        endpoint, secret = await store.create(
            conn,
            box,
            client_id=caller.client_id,
            mode=caller.key.mode,
            url=url,
            event_types=list(body.event_types) if body.event_types is not None else None,
            description=body.description,
        )
    return json_response({**_render(endpoint), "secret": secret}, 201)


@router.get(
    "/webhooks",
    response_model=EndpointList,
    responses=_responses(),
    summary="List the webhook endpoints of the key's client and mode, oldest first",
)
async def list_all(
    request: Request, caller: ApiCaller, limit: Limit = 50, cursor: Cursor = None
) -> Response:
    services = Services.of(request)
    after: tuple[datetime, UUID] | None = None
    if cursor is not None:
        stamp, _, ident = _decode_cursor(cursor).partition("|")
        try:
            after = (datetime.fromisoformat(stamp), UUID(ident))
        except ValueError:
            raise _bad_cursor() from None
    async with services.pool.acquire() as conn:
        found = await store.list_endpoints(
            conn, caller.client_id, caller.key.mode, after=after, limit=limit + 1
        )
    page = found[:limit]
    next_cursor = None
    if len(found) > limit:
        last = page[-1]
        next_cursor = _encode_cursor(f"{last.created_at.isoformat()}|{last.id}")
    return json_response({"data": [_render(e) for e in page], "next_cursor": next_cursor})


@router.get(
    "/webhooks/{endpoint_id}",
    response_model=EndpointOut,
    responses=_responses(404),
    summary="Read a webhook endpoint",
)
async def read(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    return json_response(_render(await _endpoint(Services.of(request), caller, endpoint_id)))


@router.patch(
    "/webhooks/{endpoint_id}",
    response_model=EndpointOut,
    responses=_responses(413, 415, 422, 404),
    summary="Change a webhook endpoint's url, description, event types or enabled",
    openapi_extra=body_schema(WebhookUpdate),
)
async def change(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    services = Services.of(request)
    body = await read_body(request, WebhookUpdate)
    changes: dict[str, Any] = {k: getattr(body, k) for k in body.model_fields_set}
    if changes.get("url") is not None:
        changes["url"] = await _checked_url(services, caller, changes["url"])
    for field in ("url", "description", "enabled"):
        if field in changes and changes[field] is None:
            raise ApiProblem(422, "null_not_allowed", f"{field} cannot be null", field=field)
    if changes.get("event_types") is not None:
        changes["event_types"] = list(changes["event_types"])
    async with services.pool.acquire() as conn:
        endpoint = await store.update(
            conn, caller.client_id, caller.key.mode, endpoint_id, changes, now=services.now()
        )
    if endpoint is None:
        raise _not_found(endpoint_id)
    return json_response(_render(endpoint))


@router.delete(
    "/webhooks/{endpoint_id}",
    status_code=204,
    responses=_responses(404),
    summary="Delete a webhook endpoint, its deliveries and attempts",
)
async def remove(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    services = Services.of(request)
    async with services.pool.acquire() as conn:
        deleted = await store.delete(conn, caller.client_id, caller.key.mode, endpoint_id)
    if not deleted:
        raise _not_found(endpoint_id)
    return Response(status_code=204)


@router.post(
    "/webhooks/{endpoint_id}/rotate-secret",
    response_model=WebhookCreated,
    responses=_responses(404, 503),
    summary="Replace the secret; the old one keeps signing for webhooks.rotation_overlap",
)
async def rotate(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    services = Services.of(request)
    box = _box(services)
    overlap = timedelta(seconds=services.settings.webhooks.rotation_overlap)
    async with services.pool.acquire() as conn:
        rotated = await store.rotate_secret(
            conn,
            box,
            caller.client_id,
            caller.key.mode,
            endpoint_id,
            now=services.now(),
            overlap=overlap,
        )
    if rotated is None:
        raise _not_found(endpoint_id)
    endpoint, secret = rotated
    return json_response({**_render(endpoint), "secret": secret})


@router.post(
    "/webhooks/{endpoint_id}/test",
    status_code=202,
    responses=_responses(409, 404),
    summary="Send a signed webhook_test event to this endpoint",
)
async def send_test(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    services = Services.of(request)
    endpoint = await _endpoint(services, caller, endpoint_id)
    _require_enabled(endpoint)
    async with services.pool.acquire() as conn:
        event_id, delivery_id = await store.send_test(conn, endpoint, services.now())
    return json_response({"event_id": event_id, "delivery_id": delivery_id}, 202)


def _require_enabled(endpoint: Endpoint) -> None:
    if not endpoint.enabled:
        raise ApiProblem(
            409,
            "webhook_disabled",
            f"the endpoint is disabled ({endpoint.disabled_reason}); enable it first",
        )


@router.get(
    "/webhooks/{endpoint_id}/deliveries",
    response_model=AttemptList,
    responses=_responses(404),
    summary="The endpoint's delivery attempts, newest first",
)
async def attempts(
    request: Request,
    caller: ApiCaller,
    endpoint_id: EndpointId,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    services = Services.of(request)
    await _endpoint(services, caller, endpoint_id)
    before = None
    if cursor is not None:
        text = _decode_cursor(cursor)
        if not text.isdigit() or len(text) > 19:
            raise _bad_cursor()
        before = int(text)
    async with services.pool.acquire() as conn:
        found = await store.list_attempts(conn, endpoint_id, before=before, limit=limit + 1)
    page = found[:limit]
    next_cursor = _encode_cursor(str(page[-1].id)) if len(found) > limit else None
    return json_response({"data": [_render_attempt(a) for a in page], "next_cursor": next_cursor})


@router.post(
    "/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver",
    status_code=202,
    responses=_responses(409, 404),
    summary="Send a delivery again now, with a fresh round of retries",
)
async def redeliver(
    request: Request,
    caller: ApiCaller,
    endpoint_id: EndpointId,
    delivery_id: Annotated[int, Path(ge=1, le=2**63 - 1)],
) -> Response:
    services = Services.of(request)
    endpoint = await _endpoint(services, caller, endpoint_id)
    _require_enabled(endpoint)
    async with services.pool.acquire() as conn:
        found = await store.redeliver(conn, endpoint_id, delivery_id, services.now())
    if not found:
        raise ApiProblem(
            404, "delivery_not_found", f"no delivery {delivery_id} for endpoint {endpoint_id}"
        )
    return json_response({"delivery_id": delivery_id, "status": "pending"}, 202)


@router.post(
    "/webhooks/{endpoint_id}/recover",
    status_code=202,
    response_model=Recovered,
    responses=_responses(409, 413, 415, 422, 404),
    summary="Send again every failed delivery of events created in [since, until)",
    openapi_extra=body_schema(RecoverRequest),
)
async def recover(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    services = Services.of(request)
    body = await read_body(request, RecoverRequest)
    now = services.now()
    until = body.until or now
    if body.since.tzinfo is None or until.tzinfo is None:
        raise ApiProblem(422, "time_zone_required", "give times with a zone (Z or +hh:mm)")
    if body.since >= until:
        raise ApiProblem(422, "empty_window", "since must be before until", field="since")
    endpoint = await _endpoint(services, caller, endpoint_id)
    _require_enabled(endpoint)
    async with services.pool.acquire() as conn:
        count = await store.recover(conn, endpoint_id, body.since, until, now)
    return json_response({"recovered": count}, 202)
