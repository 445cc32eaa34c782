"""Payment-modal sessions: ``POST /api/v1/sessions`` (API key) and ``/api/v1/session/...``
(session token).

The merchant backend fixes recipient, destination chain, token, optionally the
amount and excluded source chains; the modal (holding only the session token) can
read the session and what it may see of its client, get quotes for it, create
intents within it and say "I have made payment" (trigger processing) for intents it
created. The session endpoints accept session tokens only, and the API-key endpoints
API keys only. A session's cap of intents is ``api.sessions.cap``'s.
"""

from __future__ import annotations

import math
import secrets
from datetime import UTC, datetime
from typing import Annotated, Any

from eth_utils import to_checksum_address
from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from intentd.api.callers.auth import Caller
from intentd.api.callers.security import ApiCaller, IdempotencyKey, SessionCaller, errors
from intentd.api.context import API_PREFIX, Services, json_response, read_body
from intentd.api.intents.routes import IntentAddress, load_intent, trigger_response
from intentd.api.models import (
    QuoteList,
    SessionClient,
    SessionCreate,
    SessionCreated,
    SessionInfo,
    SessionIntentCreate,
    TriggerResult,
)
from intentd.api.problems import ApiProblem
from intentd.api.render import quote_json, token_json
from intentd.api.sessions.cap import within_cap
from intentd.api.sessions.tokens import Session, sign_session
from intentd.contract.record import IntentRecord, render_record
from intentd.domain.amounts import AmountError, format_amount, parse_amount
from intentd.intents import quotes
from intentd.intents.chain_names import find_chain, name_set
from intentd.intents.service import IntentRequest, create_intent
from intentd.intents.validation import (
    IntentRequestError,
    check_address,
    known_chain,
    supported_token,
)
from intentd.settings import ChainConfig

__all__ = ["router"]

router = APIRouter(prefix=API_PREFIX, tags=["payment-modal sessions"])


def _body_schema(name: str) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
        }
    }


def _time(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _session_json(services: Services, session: Session) -> dict[str, Any]:
    chain = services.settings.chains[session.destination_chain]
    token = chain.token(session.token)
    assert token is not None
    return {
        "session_id": session.id,
        "recipient": to_checksum_address(session.recipient),
        "amount": session.amount,
        "destinationChain": session.destination_chain,
        "token": token_json(chain, session.token, token),
        "excludeChains": list(session.exclude_chains),
        "expires_at": _time(session.expires_at),
    }


def _session_amount(text: str | None, decimals: int) -> str | None:
    """The fixed amount of a session (None: the payer chooses), in canonical form."""
    if text is None or text.strip() == "":
        return None
    try:
        value = parse_amount(text, decimals, allow_zero=True)
    except AmountError as exc:
        raise IntentRequestError(exc.code, "amount", str(exc)) from None
    return format_amount(value, decimals) if value else None


@router.post(
    "/sessions",
    status_code=201,
    response_model=SessionCreated,
    responses=errors(403, 413, 415, 422, 503),
    summary="Create a session token for the payment modal (merchant backend)",
    openapi_extra=_body_schema("SessionCreate"),
)
async def create_session(request: Request, caller: ApiCaller) -> Response:
    services = Services.of(request)
    body = await read_body(request, SessionCreate)
    settings = services.settings
    if not services.auth.sessions_enabled:
        raise ApiProblem(503, "sessions_disabled", "sessions are not configured on this deployment")
    destination = known_chain(settings, body.destinationChain, "destinationChain")
    caller.require(destination, "destinationChain")
    token_address, token = supported_token(destination, body.token, "token")
    recipient = check_address(body.recipient, "recipient")
    assert recipient is not None
    excluded = {known_chain(settings, name, "excludeChains").name for name in body.excludeChains}
    ttl = body.expires_in or settings.api.session_ttl
    if not 60 <= ttl <= settings.api.max_session_ttl:
        raise IntentRequestError(
            "invalid_expiry",
            "expires_in",
            f"expires_in must be between 60 and {settings.api.max_session_ttl} seconds",
        )
    now = int(services.now().timestamp())
    session = Session(
        id=f"ses_{secrets.token_urlsafe(16)}",
        key_id=caller.key.id,
        client_id=caller.client_id,
        recipient=recipient,
        amount=_session_amount(body.amount, token.decimals),
        destination_chain=destination.name,
        token=token_address,
        exclude_chains=tuple(sorted(excluded)),
        issued_at=now,
        expires_at=now + ttl,
    )
    secret = settings.session_secret
    assert secret is not None
    token_text = sign_session(session, secret.get_secret_value().encode())
    return json_response({**_session_json(services, session), "session_token": token_text}, 201)


def _session(caller: Caller) -> Session:
    assert caller.session is not None
    return caller.session


@router.get(
    "/session",
    response_model=SessionInfo,
    responses=errors(503),
    summary="The session the token stands for (payment modal)",
)
async def session_info(request: Request, caller: SessionCaller) -> Response:
    return json_response(_session_json(Services.of(request), _session(caller)))


@router.get(
    "/session/client",
    response_model=SessionClient,
    responses=errors(503),
    summary="The merchant the session pays, as the payer may see it (payment modal)",
)
async def session_client(request: Request, caller: SessionCaller) -> Response:
    """The session's client: its id and name (the name the key was created for, which
    is the client's: clients are never renamed), the network classes its key may use,
    and the chains the payer may pay from (those, less the session's excluded ones).
    Nothing else: no key, no secret, nothing of another client."""
    session = _session(caller)
    chains = Services.of(request).settings.chains.values()
    usable = [c.name for c in chains if caller.may_use(c) and c.name not in session.exclude_chains]
    return json_response(
        {
            "id": str(caller.client_id),
            "name": caller.key.client_name,
            "networks": sorted(caller.networks),
            "chains": sorted(usable),
        }
    )


def _amount(session: Session, given: str | None, decimals: int) -> str:
    if session.amount is None:
        if given is None or given.strip() == "":
            raise IntentRequestError(
                "field_required", "amount", "this session leaves the amount to the payer"
            )
        return given
    if given is not None and given.strip() != "":
        try:
            same = parse_amount(given, decimals) == parse_amount(session.amount, decimals)
        except AmountError as exc:
            raise IntentRequestError(exc.code, "amount", str(exc)) from None
        if not same:
            raise ApiProblem(
                403,
                "session_constraint",
                f"the session fixes the amount at {session.amount}",
                field="amount",
            )
    return session.amount


def _token_out(services: Services, session: Session) -> tuple[ChainConfig, str, int]:
    chain = services.settings.chains[session.destination_chain]
    token = chain.token(session.token)
    assert token is not None
    return chain, token.symbol, token.decimals


@router.get(
    "/session/quotes",
    response_model=QuoteList,
    responses=errors(403, 422, 503),
    summary="Quotes of every source chain and token for the session (payment modal)",
)
async def session_quotes(
    request: Request,
    caller: SessionCaller,
    amount: Annotated[
        str | None, Query(max_length=100, description="required if the payer chooses it")
    ] = None,
    excludeChains: Annotated[  # noqa: N803 - the modal's setting name
        list[str] | None, Query(max_length=64, description="source chains to leave out")
    ] = None,
) -> Response:
    services = Services.of(request)
    session = _session(caller)
    _, symbol, decimals = _token_out(services, session)
    value = _amount(session, amount, decimals)
    found = quotes.multi_source(
        services.settings,
        services.prices,
        session.destination_chain,
        session.token,
        value,
        amount_symbol=symbol,
        source_allowed=caller.may_use,
        exclude=frozenset(session.exclude_chains)
        | name_set(services.settings.chains, excludeChains or ()),
    )
    found = services.liquidity.covering(found)  # what the relayer can pay out there
    now, ttl = services.now(), services.settings.pricing.quote_ttl
    return json_response(
        {"quotes": [quote_json(q, value, symbol, now=now, ttl=ttl) for q in found]}
    )


def _session_end(services: Services, session: Session, now: datetime) -> datetime:
    """An intent of a session expires by the time its session does: the modal watches
    the intent with the session token, so it must not outlive the token."""
    left = math.floor(session.expires_at - now.timestamp())
    if left < services.settings.intents.min_expires_in:
        raise ApiProblem(
            401,
            "session_expired",
            "the session expires too soon for a payment; create a new one",
            headers={"WWW-Authenticate": 'Bearer realm="intentd"'},
        )
    return datetime.fromtimestamp(session.expires_at, UTC)


@router.post(
    "/session/intents",
    status_code=201,
    response_model=IntentRecord,
    responses=errors(403, 409, 413, 415, 422, 503),
    summary="Create the intent the payer chose, within the session (payment modal)",
    openapi_extra=_body_schema("SessionIntentCreate"),
)
async def session_intent(
    request: Request, caller: SessionCaller, key: IdempotencyKey = None
) -> Response:
    services = Services.of(request)
    session = _session(caller)
    body = await read_body(request, SessionIntentCreate)
    source = find_chain(services.settings.chains, body.source_chain)
    if source is not None and source.name in session.exclude_chains:
        raise ApiProblem(
            403,
            "session_constraint",
            f"the session excludes {source.name}",
            field="source_chain",
        )
    if source is not None:
        caller.require(source, "source_chain")
    _, symbol, decimals = _token_out(services, session)
    idempotency = f"{session.id}:{key}" if key is not None else None
    await within_cap(services, session, idempotency)
    now = services.now()
    row = await create_intent(
        services.settings,
        services.writer,
        IntentRequest(
            amount=_amount(session, body.amount, decimals),
            token_in=body.tokenIn,
            source_chain=body.source_chain,
            destination_chain=session.destination_chain,
            recipient=session.recipient,
            refund_address=body.refund_address,
            sender=body.sender,
            amount_symbol=symbol,
            token_out=session.token,
            metadata={"session_id": session.id},
            expires_by=_session_end(services, session, now),
        ),
        client_id=session.client_id,
        now=now,
        idempotency_key=idempotency,
        prices=services.prices,
        session_id=session.id,
    )
    return json_response(render_record(row), 201)


@router.get(
    "/session/intents/{intent_address}",
    response_model=IntentRecord,
    responses=errors(404, 422, 503),
    summary="Read an intent created in this session (payment modal)",
)
async def session_read(
    request: Request, caller: SessionCaller, intent_address: IntentAddress
) -> Response:
    services = Services.of(request)
    return json_response(render_record(await load_intent(services, caller, intent_address)))


@router.post(
    "/session/intents/{intent_address}/payment-made",
    response_model=TriggerResult,
    responses=errors(404, 422, 503),
    summary='"I have made payment": trigger processing of an intent of this session',
)
async def payment_made(
    request: Request, caller: SessionCaller, intent_address: IntentAddress
) -> Response:
    services = Services.of(request)
    row = await load_intent(services, caller, intent_address)
    return await trigger_response(services, caller, row)
