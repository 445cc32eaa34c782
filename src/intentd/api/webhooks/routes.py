"""``/api/v1/webhooks``: a client's webhook endpoints, their attempts, redelivery.

An endpoint belongs to the caller's client and to the mode of the caller's key (a
``test`` key sees only test endpoints). Its URL is checked at registration and at
each change (``webhooks.targets``; a name is resolved and every address checked) and
again by the dispatcher at connect time. The secret is answered once, by the create
and rotate calls. Without ``INTENTD_WEBHOOK_KEY`` the routes answer 503
``webhooks_disabled``. Every change is written to the audit log with it
(``merchant.webhooks``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Query, Request
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from intentd.adapters.postgres import webhook_endpoints as store
from intentd.api.callers.security import ApiCaller
from intentd.api.context import API_PREFIX, Services, json_response, read_body
from intentd.api.intents.refund_approvals import key_actor
from intentd.api.problems import ApiProblem
from intentd.api.webhooks.models import (
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
from intentd.api.webhooks.views import (
    bad_cursor,
    checked_url,
    decode_cursor,
    encode_cursor,
    endpoint_of,
    not_found,
    render,
    render_attempt,
    require_enabled,
    responses,
    sealing_box,
    spend_send_call,
)
from intentd.merchant import webhooks as audited

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


@router.post(
    "/webhooks",
    status_code=201,
    response_model=WebhookCreated,
    responses=responses(409, 413, 415, 422, 503),
    summary="Register a webhook endpoint (the answer holds its secret, shown once)",
    openapi_extra=body_schema(WebhookCreate),
)
async def create(request: Request, caller: ApiCaller) -> Response:
    services = Services.of(request)
    body = await read_body(request, WebhookCreate)
    box = sealing_box(services)
    url = await checked_url(services, caller, body.url)
    try:
        async with services.connection() as conn:
            endpoint, secret = await audited.create(
                conn,
                box,
                key_actor(services, caller, request),
                mode=caller.key.mode,
                url=url,
                event_types=list(body.event_types) if body.event_types is not None else None,
                description=body.description,
                max_endpoints=services.settings.webhooks.max_endpoints_per_client,
            )
    except store.TooManyEndpoints as exc:
        raise ApiProblem(409, "too_many_webhooks", f"{exc}; delete one first") from None
    return json_response({**render(endpoint), "secret": secret}, 201)


@router.get(
    "/webhooks",
    response_model=EndpointList,
    responses=responses(),
    summary="List the webhook endpoints of the key's client and mode, oldest first",
)
async def list_all(
    request: Request, caller: ApiCaller, limit: Limit = 50, cursor: Cursor = None
) -> Response:
    services = Services.of(request)
    after: tuple[datetime, UUID] | None = None
    if cursor is not None:
        stamp, _, ident = decode_cursor(cursor).partition("|")
        try:
            after = (datetime.fromisoformat(stamp), UUID(ident))
        except ValueError:
            raise bad_cursor() from None
    async with services.connection() as conn:
        found = await store.list_endpoints(
            conn, caller.client_id, caller.key.mode, after=after, limit=limit + 1
        )
    page = found[:limit]
    next_cursor = None
    if len(found) > limit:
        last = page[-1]
        next_cursor = encode_cursor(f"{last.created_at.isoformat()}|{last.id}")
    return json_response({"data": [render(e) for e in page], "next_cursor": next_cursor})


@router.get(
    "/webhooks/{endpoint_id}",
    response_model=EndpointOut,
    responses=responses(404),
    summary="Read a webhook endpoint",
)
async def read(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    return json_response(render(await endpoint_of(Services.of(request), caller, endpoint_id)))


@router.patch(
    "/webhooks/{endpoint_id}",
    response_model=EndpointOut,
    responses=responses(413, 415, 422, 404),
    summary="Change a webhook endpoint's url, description, event types or enabled",
    openapi_extra=body_schema(WebhookUpdate),
)
async def change(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    services = Services.of(request)
    body = await read_body(request, WebhookUpdate)
    changes: dict[str, Any] = {k: getattr(body, k) for k in body.model_fields_set}
    if changes.get("url") is not None:
        changes["url"] = await checked_url(services, caller, changes["url"])
    for field in ("url", "description", "enabled"):
        if field in changes and changes[field] is None:
            raise ApiProblem(422, "null_not_allowed", f"{field} cannot be null", field=field)
    if changes.get("event_types") is not None:
        changes["event_types"] = list(changes["event_types"])
    async with services.connection() as conn:
        endpoint = await audited.update(
            conn,
            key_actor(services, caller, request),
            caller.key.mode,
            endpoint_id,
            changes,
            now=services.now(),
        )
    if endpoint is None:
        raise not_found(endpoint_id)
    return json_response(render(endpoint))


@router.delete(
    "/webhooks/{endpoint_id}",
    status_code=204,
    responses=responses(404),
    summary="Delete a webhook endpoint, its deliveries and attempts",
)
async def remove(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        deleted = await audited.delete(
            conn, key_actor(services, caller, request), caller.key.mode, endpoint_id
        )
    if not deleted:
        raise not_found(endpoint_id)
    return Response(status_code=204)


@router.post(
    "/webhooks/{endpoint_id}/rotate-secret",
    response_model=WebhookCreated,
    responses=responses(404, 503),
    summary="Replace the secret; the old one keeps signing for webhooks.rotation_overlap",
)
async def rotate(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    services = Services.of(request)
    box = sealing_box(services)
    overlap = timedelta(seconds=services.settings.webhooks.rotation_overlap)
    async with services.connection() as conn:
        rotated = await audited.rotate_secret(
            conn,
            box,
            key_actor(services, caller, request),
            caller.key.mode,
            endpoint_id,
            now=services.now(),
            overlap=overlap,
        )
    if rotated is None:
        raise not_found(endpoint_id)
    endpoint, secret = rotated
    return json_response({**render(endpoint), "secret": secret})


@router.post(
    "/webhooks/{endpoint_id}/test",
    status_code=202,
    responses=responses(409, 404, sends=True),
    summary="Send a signed webhook_test event to this endpoint",
)
async def send_test(request: Request, caller: ApiCaller, endpoint_id: EndpointId) -> Response:
    services = Services.of(request)
    endpoint = await endpoint_of(services, caller, endpoint_id)
    require_enabled(endpoint)
    await spend_send_call(services, caller)
    async with services.connection() as conn:
        event_id, delivery_id = await audited.send_test(
            conn, key_actor(services, caller, request), endpoint, services.now()
        )
    return json_response({"event_id": event_id, "delivery_id": delivery_id}, 202)


@router.get(
    "/webhooks/{endpoint_id}/deliveries",
    response_model=AttemptList,
    responses=responses(404),
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
    await endpoint_of(services, caller, endpoint_id)
    before = None
    if cursor is not None:
        text = decode_cursor(cursor)
        if not text.isdigit() or len(text) > 19:
            raise bad_cursor()
        before = int(text)
    async with services.connection() as conn:
        found = await store.list_attempts(conn, endpoint_id, before=before, limit=limit + 1)
    page = found[:limit]
    next_cursor = encode_cursor(str(page[-1].id)) if len(found) > limit else None
    return json_response({"data": [render_attempt(a) for a in page], "next_cursor": next_cursor})


@router.post(
    "/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver",
    status_code=202,
    responses=responses(409, 404, sends=True),
    summary="Send a delivery again now, with a fresh round of retries",
)
async def redeliver(
    request: Request,
    caller: ApiCaller,
    endpoint_id: EndpointId,
    delivery_id: Annotated[int, Path(ge=1, le=2**63 - 1)],
) -> Response:
    services = Services.of(request)
    endpoint = await endpoint_of(services, caller, endpoint_id)
    require_enabled(endpoint)
    await spend_send_call(services, caller)
    async with services.connection() as conn:
        found = await audited.redeliver(
            conn, key_actor(services, caller, request), endpoint, delivery_id, services.now()
        )
    if not found:
        raise ApiProblem(
            404, "delivery_not_found", f"no delivery {delivery_id} for endpoint {endpoint_id}"
        )
    return json_response({"delivery_id": delivery_id, "status": "pending"}, 202)


@router.post(
    "/webhooks/{endpoint_id}/recover",
    status_code=202,
    response_model=Recovered,
    responses=responses(409, 413, 415, 422, 404, sends=True),
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
    endpoint = await endpoint_of(services, caller, endpoint_id)
    require_enabled(endpoint)
    await spend_send_call(services, caller)
    async with services.connection() as conn:
        count = await audited.recover(
            conn,
            key_actor(services, caller, request),
            endpoint,
            since=body.since,
            until=until,
            now=now,
        )
    return json_response({"recovered": count}, 202)
