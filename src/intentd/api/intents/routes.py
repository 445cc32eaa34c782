"""``/api/v1/intents``: create (the CLI's creation code), read, trigger processing."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from intentd.api.callers.auth import Caller
from intentd.api.callers.security import ApiCaller, IdempotencyKey, errors
from intentd.api.context import API_PREFIX, Services, json_response, read_body
from intentd.api.models import IntentCreate, TriggerResult
from intentd.api.problems import ApiProblem
from intentd.api.render import trigger_json
from intentd.api.trigger_gate import TriggerRefused
from intentd.chain.errors import ChainUnavailable
from intentd.contract.record import IntentRecord, IntentRow, render_record
from intentd.intents.chain_names import find_chain
from intentd.intents.service import IntentRequest, create_intent
from intentd.intents.validation import check_address

__all__ = [
    "check_networks",
    "create_record",
    "load_intent",
    "read_by_address",
    "read_by_id",
    "router",
    "trigger_response",
]

router = APIRouter(prefix=API_PREFIX, tags=["intents"])

IntentId = Annotated[int, Path(ge=1, le=2**63 - 1, description="numeric intent id")]
IntentAddress = Annotated[
    str, Path(max_length=64, description="the intent's deposit address (intent_address)")
]


def check_networks(services: Services, caller: Caller, *chains: tuple[str, str]) -> None:
    """403 for a configured chain the caller's key may not use; unknown names pass
    (the intent code answers ``unknown_chain``)."""
    for name, field in chains:
        chain = find_chain(services.settings.chains, name)
        if chain is not None:
            caller.require(chain, field)


def _not_found(what: str) -> ApiProblem:
    return ApiProblem(404, "intent_not_found", f"no intent {what} for this client")


def visible(services: Services, caller: Caller, row: IntentRow | None) -> bool:
    """An intent is visible to its client's keys of a mode that may use its chain."""
    if row is None or row.client_id != caller.client_id:
        return False
    chain = services.settings.chains.get(row.source_chain)
    return chain is not None and caller.may_use(chain)


async def load_intent(services: Services, caller: Caller, address: str) -> IntentRow:
    lower = check_address(address, "intent_address")
    assert lower is not None
    row = await services.intents_by_address.get(lower)
    if not visible(services, caller, row) or (
        caller.session is not None and row is not None and row.session_id != caller.session.id
    ):
        raise _not_found(address)
    assert row is not None
    return row


async def trigger_response(services: Services, caller: Caller, row: IntentRow) -> Response:
    """Trigger-processing of ``row`` for ``caller`` (a session's payer spends the
    session's slots, ``api.trigger_gate``)."""
    session_id = caller.session.id if caller.session is not None else None
    try:
        outcome = await services.processor.trigger(row, now=services.now(), session_id=session_id)
    except TriggerRefused as refused:
        raise ApiProblem(
            429, refused.code, refused.detail, headers={"Retry-After": str(refused.retry_after)}
        ) from None
    except ChainUnavailable:
        raise ApiProblem(
            503,
            "chain_unavailable",
            f"{row.source_chain} could not be read; try again later",
            headers={"Retry-After": "5"},
        ) from None
    return json_response(trigger_json(outcome, services.settings.chains))


async def create_record(request: Request, caller: Caller, key: str | None) -> IntentRecord:
    """Create an intent from the request's body (``Idempotency-Key`` already checked):
    the record to answer 201 with."""
    services = Services.of(request)
    body = await read_body(request, IntentCreate)
    check_networks(
        services,
        caller,
        (body.source_chain, "source_chain"),
        (body.destination_chain, "destination_chain"),
    )
    row = await create_intent(
        services.settings,
        services.writer,
        IntentRequest(
            amount=body.amount,
            token_in=body.tokenIn,
            source_chain=body.source_chain,
            destination_chain=body.destination_chain,
            recipient=body.recipient,
            refund_address=body.refund_address,
            sender=body.sender,
            amount_symbol=body.amountSymbol,
            token_out=body.tokenOut,
            metadata=body.metadata,
            expires_in=body.expires_in,
            bridge=body.bridge,
            slippage=body.slippage,
        ),
        client_id=caller.client_id,
        now=services.now(),
        idempotency_key=key,
        prices=services.prices,
    )
    return render_record(row)


async def read_by_id(services: Services, caller: Caller, intent_id: int) -> IntentRecord:
    row = await services.intents_by_id.get(intent_id)
    if not visible(services, caller, row):
        raise _not_found(str(intent_id))
    assert row is not None
    return render_record(row)


async def read_by_address(services: Services, caller: Caller, address: str) -> IntentRecord:
    return render_record(await load_intent(services, caller, address))


@router.post(
    "/intents",
    status_code=201,
    response_model=IntentRecord,
    responses=errors(403, 409, 413, 415, 422, 503),
    summary="Create a payment intent",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/IntentCreate"}}
            },
        }
    },
)
async def create(request: Request, caller: ApiCaller, key: IdempotencyKey = None) -> Response:
    return json_response(await create_record(request, caller, key), 201)


@router.get(
    "/intents/{intent_id}",
    response_model=IntentRecord,
    responses=errors(404, 422),
    summary="Read an intent by id",
)
async def by_id(request: Request, caller: ApiCaller, intent_id: IntentId) -> Response:
    return json_response(await read_by_id(Services.of(request), caller, intent_id))


@router.get(
    "/intents/by-address/{intent_address}",
    response_model=IntentRecord,
    responses=errors(404, 422),
    summary="Read an intent by its deposit address",
)
async def by_address(
    request: Request, caller: ApiCaller, intent_address: IntentAddress
) -> Response:
    return json_response(await read_by_address(Services.of(request), caller, intent_address))


@router.post(
    "/intents/{intent_address}/trigger-processing",
    response_model=TriggerResult,
    responses=errors(404, 422, 503),
    summary="Rescan the intent's window on its source chain and credit what is found",
)
async def trigger(request: Request, caller: ApiCaller, intent_address: IntentAddress) -> Response:
    services = Services.of(request)
    row = await load_intent(services, caller, intent_address)
    return await trigger_response(services, caller, row)
