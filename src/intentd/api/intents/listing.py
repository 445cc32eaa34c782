"""``GET /api/v1/intents``: a client's intents, filtered, newest first, by cursor.

What a merchant reconciles with. The route takes an API key and shows only the
caller's client's intents on source chains its key may use (the rule of
``GET /intents/{intent_id}``). A page is ``{"data": [intent record, …], "has_more":
bool, "next_cursor": str | null}``. The order and why a cursor never skips an
intent that commits late: ``adapters.postgres.intent_list``. Parameters and their problems:
``api.intents.list_params``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, BeforeValidator, Field
from starlette.responses import Response

from intentd.adapters.postgres import intent_list
from intentd.adapters.postgres.intent_list import IntentFilter, ListPosition
from intentd.api.callers.auth import Caller
from intentd.api.callers.security import ApiCaller, errors
from intentd.api.context import API_PREFIX, Services, json_response
from intentd.api.intents.list_params import (
    chain_filter,
    decode_list_cursor,
    encode_list_cursor,
    metadata_filter,
)
from intentd.api.openapi.path_methods import PathMethodsRoute
from intentd.api.paging import CreatedAfter, CreatedBefore, Cursor, Order, parse_time
from intentd.contract.record import IntentRecord, render_record
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.intents.validation import check_address
from intentd.settings import Settings

__all__ = ["MAX_LIMIT", "IntentPage", "read_page", "router", "usable_chains"]

router = APIRouter(prefix=API_PREFIX, tags=["intents"], route_class=PathMethodsRoute)

MAX_LIMIT = 100
_Text = Annotated[str | None, Query(min_length=1, max_length=200)]


class IntentPage(BaseModel):
    data: list[IntentRecord]
    has_more: bool = Field(description="more intents match beyond this page")
    next_cursor: str | None = Field(
        description="pass as cursor to continue after the last intent of this page (also"
        " when has_more is false: in asc order, it is where newer intents will appear);"
        " null when the page is empty and no cursor was given"
    )


def _upper(value: object) -> object:
    return value.upper() if isinstance(value, str) else value


@router.get(
    "/intents",
    response_model=IntentPage,
    responses=errors(403, 422),
    summary="List the client's intents, newest first (or oldest first), by cursor",
)
async def list_intents(
    request: Request,
    caller: ApiCaller,
    *,
    status: Annotated[
        IntentStatus | None,
        BeforeValidator(_upper),
        Query(description="only this status (any case: the Chainrails SDK sends pending)"),
    ] = None,
    funding_status: Annotated[
        FundingStatus | None, Query(description="only this funding status")
    ] = None,
    source_chain: Annotated[
        str | None, Query(max_length=64, description="only intents paid on this chain")
    ] = None,
    destination_chain: Annotated[
        str | None, Query(max_length=64, description="only intents settled on this chain")
    ] = None,
    sender: Annotated[str | None, Query(max_length=64, description="only this sender")] = None,
    recipient: Annotated[
        str | None, Query(max_length=64, description="only this recipient")
    ] = None,
    session_id: Annotated[
        str | None, Query(max_length=64, description="only intents of this payment session")
    ] = None,
    metadata_key: Annotated[
        _Text, Query(description="with metadata_value: metadata[key] equals the value")
    ] = None,
    metadata_value: Annotated[
        str | None, Query(max_length=500, description="the string metadata_key must have")
    ] = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    order: Order = "desc",
    limit: Annotated[
        int, Query(ge=1, le=MAX_LIMIT, description=f"intents per page, 1 to {MAX_LIMIT}")
    ] = 50,
    cursor: Cursor = None,
    offset: Annotated[
        int,
        Query(ge=0, le=0, description="the Chainrails SDK's paging: only 0, page by cursor"),
    ] = 0,
) -> Response:
    services = Services.of(request)
    settings = services.settings
    source = chain_filter(settings, caller, source_chain, "source_chain")
    where = IntentFilter(
        client_id=caller.client_id,
        source_chains=[source] if source is not None else usable_chains(settings, caller),
        status=status.value if status is not None else None,
        funding_status=funding_status.value if funding_status is not None else None,
        destination_chain=chain_filter(settings, caller, destination_chain, "destination_chain"),
        sender=check_address(sender, "sender", required=False),
        recipient=check_address(recipient, "recipient", required=False),
        session_id=session_id,
        metadata=metadata_filter(metadata_key, metadata_value),
        created_after=parse_time(created_after, "created_after"),
        created_before=parse_time(created_before, "created_before"),
    )
    page = await read_page(
        services, where, after=decode_list_cursor(cursor), descending=order == "desc", limit=limit
    )
    return json_response(page)


def usable_chains(settings: Settings, caller: Caller) -> list[str]:
    """The source chains whose intents the caller sees."""
    return sorted(name for name, chain in settings.chains.items() if caller.may_use(chain))


async def read_page(
    services: Services,
    where: IntentFilter,
    *,
    after: ListPosition | None = None,
    descending: bool = True,
    limit: int = 50,
) -> dict[str, Any]:
    """One page of intents matching ``where``: ``{"data", "has_more", "next_cursor"}``."""
    async with services.connection() as conn:
        found = await intent_list.page(
            conn, where, after=after, descending=descending, limit=limit + 1
        )
    last = found[min(len(found), limit) - 1][0] if found else after
    return {
        "data": [render_record(row) for _, row in found[:limit]],
        "has_more": len(found) > limit,
        "next_cursor": encode_list_cursor(last) if last is not None else None,
    }
