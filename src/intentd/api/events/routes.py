"""``/api/v1/events`` and ``/api/v1/intents/{intent_id}/events``: the event log.

A merchant that missed webhooks (or never had them) catches up here, from the same
events the lifecycle relays to Kafka (``adapters.postgres.event_log``). Both routes take an
API key and show only the caller's client's events, of intents on the network
classes its key may use (the rule of ``GET /intents/{intent_id}``). A page is
``{"data": [event, …], "has_more": bool, "next_cursor": str | null}``; every event
is the envelope of docs/events.md.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from starlette.responses import Response

from intentd.adapters.postgres import event_log
from intentd.adapters.postgres.event_log import EventFilter, LogPosition, StoredEvent
from intentd.api.callers.auth import Caller
from intentd.api.callers.security import ApiCaller, errors
from intentd.api.context import API_PREFIX, Services, json_response
from intentd.api.events.params import (
    decode_log_cursor,
    decode_sequence_cursor,
    encode_log_cursor,
    encode_sequence_cursor,
    parse_types,
)
from intentd.api.intents.routes import IntentId, visible
from intentd.api.paging import CreatedAfter, CreatedBefore, Cursor, Order, parse_time
from intentd.api.problems import ApiProblem
from intentd.contract.events import ENVELOPE_FIELDS, EventRecord
from intentd.contract.mode import mode_of

__all__ = ["EventPage", "router"]

router = APIRouter(prefix=API_PREFIX, tags=["events"])

MAX_LIMIT = 100


class EventPage(BaseModel):
    data: list[EventRecord]
    has_more: bool = Field(description="more events match beyond this page")
    next_cursor: str | None = Field(
        description="pass as cursor to continue after the last event of this page (also"
        " when has_more is false: in asc order, it is where newer events will appear);"
        " null when the page is empty and no cursor was given"
    )


Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"events per page, 1 to {MAX_LIMIT}")]


@router.get(
    "/events",
    response_model=EventPage,
    responses=errors(422),
    summary="List the client's events, newest first (or oldest first), by cursor",
)
async def list_events(
    request: Request,
    caller: ApiCaller,
    *,
    event_type: Annotated[
        list[Annotated[str, Field(max_length=200)]] | None,
        Query(
            alias="type",
            max_length=8,
            description="only these types; repeat the parameter or give a comma list",
        ),
    ] = None,
    intent_id: Annotated[
        int | None, Query(ge=1, le=2**63 - 1, description="only this intent's events")
    ] = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    order: Order = "desc",
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    where = EventFilter(
        client_id=caller.client_id,
        modes=_modes(caller),
        types=parse_types(event_type or ()),
        intent_id=intent_id,
        created_after=parse_time(created_after, "created_after"),
        created_before=parse_time(created_before, "created_before"),
    )
    after = decode_log_cursor(cursor)
    async with Services.of(request).connection() as conn:
        found = await event_log.page(
            conn, where, after=after, descending=order == "desc", limit=limit + 1
        )
    last: LogPosition | None = found[min(len(found), limit) - 1].at if found else after
    return _page(found, limit, encode_log_cursor(last) if last is not None else None)


@router.get(
    "/intents/{intent_id}/events",
    response_model=EventPage,
    responses=errors(404, 422),
    summary="An intent's events, oldest first (its timeline)",
)
async def intent_events(
    request: Request,
    caller: ApiCaller,
    intent_id: IntentId,
    limit: Limit = MAX_LIMIT,
    cursor: Cursor = None,
) -> Response:
    services = Services.of(request)
    after = decode_sequence_cursor(cursor)
    row = await services.intents_by_id.get(intent_id)
    if not visible(services, caller, row):
        raise ApiProblem(404, "intent_not_found", f"no intent {intent_id} for this client")
    async with services.connection() as conn:
        found = await event_log.timeline(
            conn, caller.client_id, intent_id, after_sequence=after, limit=limit + 1
        )
    last = found[min(len(found), limit) - 1].sequence if found else after
    return _page(found, limit, encode_sequence_cursor(last) if found or cursor else None)


def _modes(caller: Caller) -> list[str]:
    return sorted({mode_of(network) for network in caller.networks})


def _page(found: list[StoredEvent], limit: int, next_cursor: str | None) -> Response:
    events = [
        {name: e.body[name] for name in ENVELOPE_FIELDS if name in e.body} for e in found[:limit]
    ]
    return json_response(
        {"data": events, "has_more": len(found) > limit, "next_cursor": next_cursor}
    )
