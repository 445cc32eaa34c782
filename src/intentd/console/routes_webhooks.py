"""``/console/api/webhooks``: the Webhooks page, the same operations as
``/api/v1/webhooks`` (same checks, same limits, same audit records through
``merchant.webhooks``), for the screen's mode, as the signed-in user."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.responses import Response

from intentd.access.roles import Permission
from intentd.adapters.postgres import webhook_endpoints as store
from intentd.adapters.postgres.webhook_endpoints import Endpoint
from intentd.api.context import Services, json_response, read_body
from intentd.api.problems import ApiProblem
from intentd.api.webhooks.models import RecoverRequest, WebhookCreate, WebhookUpdate
from intentd.api.webhooks.views import (
    checked_url_of_mode,
    not_found,
    render,
    render_attempt,
    require_enabled,
    sealing_box,
    spend_client_send_call,
)
from intentd.console.auth import ConsoleUser, Require
from intentd.console.web import CONSOLE_API, ModeParam
from intentd.merchant import webhooks as audited

__all__ = ["router"]

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)
Reader = Annotated[ConsoleUser, Depends(Require(Permission.WEBHOOKS_READ))]
Writer = Annotated[ConsoleUser, Depends(Require(Permission.WEBHOOKS_WRITE))]
EndpointId = Annotated[UUID, Path()]


def _now() -> datetime:
    return datetime.now(UTC)


async def _endpoint(
    services: Services, user: ConsoleUser, mode: str, endpoint_id: UUID
) -> Endpoint:
    async with services.connection() as conn:
        found = await store.get(conn, user.session.client_id, mode, endpoint_id)
    if found is None:
        raise not_found(endpoint_id)
    return found


@router.get("/webhooks")
async def list_endpoints(request: Request, user: Reader, mode: ModeParam = "test") -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        found = await store.list_endpoints(
            conn, user.session.client_id, mode, after=None, limit=1000
        )
    return json_response({"data": [render(e) for e in found]})


@router.post("/webhooks")
async def create(request: Request, user: Writer, mode: ModeParam = "test") -> Response:
    services = Services.of(request)
    body = await read_body(request, WebhookCreate)
    box = sealing_box(services)
    url = await checked_url_of_mode(services, mode, body.url)
    try:
        async with services.connection() as conn:
            endpoint, secret = await audited.create(
                conn,
                box,
                user.actor(),
                mode=mode,
                url=url,
                event_types=list(body.event_types) if body.event_types is not None else None,
                description=body.description,
                max_endpoints=services.settings.webhooks.max_endpoints_per_client,
            )
    except store.TooManyEndpoints as exc:
        raise ApiProblem(409, "too_many_webhooks", f"{exc}; delete one first") from None
    return json_response({**render(endpoint), "secret": secret}, 201)


@router.patch("/webhooks/{endpoint_id}")
async def change(
    request: Request, user: Writer, endpoint_id: EndpointId, mode: ModeParam = "test"
) -> Response:
    services = Services.of(request)
    body = await read_body(request, WebhookUpdate)
    changes: dict[str, Any] = {k: getattr(body, k) for k in body.model_fields_set}
    for field in ("url", "description", "enabled"):
        if field in changes and changes[field] is None:
            raise ApiProblem(422, "null_not_allowed", f"{field} cannot be null", field=field)
    if changes.get("url") is not None:
        changes["url"] = await checked_url_of_mode(services, mode, changes["url"])
    if changes.get("event_types") is not None:
        changes["event_types"] = list(changes["event_types"])
    async with services.connection() as conn:
        endpoint = await audited.update(conn, user.actor(), mode, endpoint_id, changes, now=_now())
    if endpoint is None:
        raise not_found(endpoint_id)
    return json_response(render(endpoint))


@router.delete("/webhooks/{endpoint_id}")
async def remove(
    request: Request, user: Writer, endpoint_id: EndpointId, mode: ModeParam = "test"
) -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        if not await audited.delete(conn, user.actor(), mode, endpoint_id):
            raise not_found(endpoint_id)
    return json_response({"deleted": True})


@router.post("/webhooks/{endpoint_id}/rotate-secret")
async def rotate(
    request: Request, user: Writer, endpoint_id: EndpointId, mode: ModeParam = "test"
) -> Response:
    services = Services.of(request)
    box = sealing_box(services)
    overlap = timedelta(seconds=services.settings.webhooks.rotation_overlap)
    async with services.connection() as conn:
        rotated = await audited.rotate_secret(
            conn, box, user.actor(), mode, endpoint_id, now=_now(), overlap=overlap
        )
    if rotated is None:
        raise not_found(endpoint_id)
    endpoint, secret = rotated
    return json_response({**render(endpoint), "secret": secret})


@router.post("/webhooks/{endpoint_id}/test")
async def send_test(
    request: Request, user: Writer, endpoint_id: EndpointId, mode: ModeParam = "test"
) -> Response:
    services = Services.of(request)
    endpoint = await _endpoint(services, user, mode, endpoint_id)
    require_enabled(endpoint)
    await spend_client_send_call(services, user.session.client_id)
    async with services.connection() as conn:
        event_id, delivery_id = await audited.send_test(conn, user.actor(), endpoint, _now())
    return json_response({"event_id": event_id, "delivery_id": delivery_id}, 202)


@router.get("/webhooks/{endpoint_id}/attempts")
async def attempts(
    request: Request,
    user: Reader,
    endpoint_id: EndpointId,
    mode: ModeParam = "test",
    *,
    before: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
) -> Response:
    services = Services.of(request)
    await _endpoint(services, user, mode, endpoint_id)
    async with services.connection() as conn:
        found = await store.list_attempts(conn, endpoint_id, before=before, limit=limit + 1)
    page = found[:limit]
    return json_response(
        {
            "data": [render_attempt(a) for a in page],
            "next_before": page[-1].id if len(found) > limit else None,
        }
    )


@router.post("/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver")
async def redeliver(
    request: Request,
    user: Writer,
    endpoint_id: EndpointId,
    delivery_id: Annotated[int, Path(ge=1, le=2**63 - 1)],
    *,
    mode: ModeParam = "test",
) -> Response:
    services = Services.of(request)
    endpoint = await _endpoint(services, user, mode, endpoint_id)
    require_enabled(endpoint)
    await spend_client_send_call(services, user.session.client_id)
    async with services.connection() as conn:
        found = await audited.redeliver(conn, user.actor(), endpoint, delivery_id, _now())
    if not found:
        raise ApiProblem(
            404, "delivery_not_found", f"no delivery {delivery_id} for endpoint {endpoint_id}"
        )
    return json_response({"delivery_id": delivery_id, "status": "pending"}, 202)


@router.post("/webhooks/{endpoint_id}/recover")
async def recover(
    request: Request, user: Writer, endpoint_id: EndpointId, mode: ModeParam = "test"
) -> Response:
    services = Services.of(request)
    body = await read_body(request, RecoverRequest)
    now = _now()
    until = body.until or now
    if body.since.tzinfo is None or until.tzinfo is None:
        raise ApiProblem(422, "time_zone_required", "give times with a zone (Z or +hh:mm)")
    if body.since >= until:
        raise ApiProblem(422, "empty_window", "since must be before until", field="since")
    endpoint = await _endpoint(services, user, mode, endpoint_id)
    require_enabled(endpoint)
    await spend_client_send_call(services, user.session.client_id)
    async with services.connection() as conn:
        count = await audited.recover(
            conn, user.actor(), endpoint, since=body.since, until=until, now=now
        )
    return json_response({"recovered": count}, 202)
