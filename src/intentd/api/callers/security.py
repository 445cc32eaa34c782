"""FastAPI dependencies that authenticate a request (and show the schemes in OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Header, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from intentd.api.callers.auth import Caller
from intentd.api.context import Services
from intentd.api.models import Problem

__all__ = ["ApiCaller", "IdempotencyKey", "SessionCaller", "errors"]

_api_key_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    bearerFormat="itd_test_… or itd_live_…",
    description="A client's API key (intentd keys create); held by the merchant backend only.",
)
_session_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="SessionToken",
    bearerFormat="itd_sess_…",
    description="A session token from POST /api/v1/sessions, used by the payment modal.",
)
Credentials = HTTPAuthorizationCredentials | None


async def _api_caller(
    request: Request, _: Annotated[Credentials, Security(_api_key_scheme)]
) -> Caller:
    auth = Services.of(request).auth
    caller = await auth.api_key(request.headers.get("authorization"), auth.source_of(request.scope))
    route = request.scope.get("route")
    caller.require_scope(request.method, getattr(route, "path", request.url.path))
    return caller


async def _session_caller(
    request: Request, _: Annotated[Credentials, Security(_session_scheme)]
) -> Caller:
    auth = Services.of(request).auth
    return await auth.session(request.headers.get("authorization"), auth.source_of(request.scope))


ApiCaller = Annotated[Caller, Depends(_api_caller)]
SessionCaller = Annotated[Caller, Depends(_session_caller)]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        pattern=r"^[\x21-\x7e]{1,255}$",
        description="a retried create with the same key returns the same intent",
    ),
]

_DESCRIPTIONS = {
    400: "The request does not fit the schema (code validation_error, malformed_json, ...)",
    401: "Missing, malformed, unknown, revoked or expired credentials",
    403: (
        "The key's network class, or the session, does not allow this; or the key's"
        " scopes do not (insufficient_scope)"
    ),
    404: "No such intent for this client",
    409: (
        "The Idempotency-Key was used with a different request (idempotency_key_reused),"
        " the session has created its cap of intents (session_intent_limit), or the"
        " client has its cap of intents awaiting payment (open_intent_limit), or the"
        " relayer cannot cover the amount out on the destination now (insufficient_liquidity)"
    ),
    413: "The body is too large",
    415: "The body is not application/json",
    422: (
        "Valid JSON, but not a valid request (unknown_chain, invalid_address, amount_*, ...;"
        " amount_rounds_to_zero or amount_too_precise_for_route when tokenOut cannot carry"
        " the amount, amount_too_large beyond 256 bits)"
    ),
    429: (
        "Over a rate limit (code rate_limited: the key's; session_rate_limited: the"
        " session token's; source_rate_limited: requests without a valid key from this"
        " address); retry after Retry-After seconds"
    ),
    503: (
        "The database is unavailable (database_unavailable), the server is at capacity"
        " (overloaded, database_busy, writer_busy), the chain's RPC is unavailable"
        " (chain_unavailable), a price cannot be trusted now (price_unavailable), the"
        " relayer's float on the destination is not known (liquidity_unknown): retry after"
        " Retry-After; or sessions are not configured (sessions_disabled)"
    ),
}
_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}}},
    429: {"Retry-After": {"schema": {"type": "string"}, "description": "seconds"}},
    503: {"Retry-After": {"schema": {"type": "string"}, "description": "seconds"}},
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` of the problem answers an operation can give (plus the
    ones every authenticated operation can give: its key lookup may find the database
    away, a 503)."""
    codes = sorted({400, 401, 429, 503, *statuses})
    return {
        code: {
            "model": Problem,
            "description": _DESCRIPTIONS[code],
            **({"headers": _HEADERS[code]} if code in _HEADERS else {}),
        }
        for code in codes
    }
