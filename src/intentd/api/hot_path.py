"""The busiest operations served without FastAPI's routing and dependency solving.

``POST /api/v1/intents``, ``GET /api/v1/intents/{intent_id}`` and
``GET /api/v1/intents/by-address/{intent_address}`` stay declared in
``api.intents.routes``: they make the OpenAPI document, and FastAPI serves every request
this middleware leaves alone. The middleware takes a request only when FastAPI's
own parameter checks would surely pass, so that it never has to imitate them:

- the exact method and path, no ``root_path``;
- an id of 1 to 19 digits without a leading zero, at most ``2**63 - 1``; an address
  of 1 to 64 letters and digits;
- for a create, at most one ``Idempotency-Key``, of 1 to 255 visible ASCII characters.

It then does what the FastAPI route does, in the same order: authenticate (the
same ``Authenticator`` call, so the rate limit counts the request once) and check
the key's scopes (``Caller.require_scope``, as ``api.callers.security`` does), then the
handler code of ``api.intents.routes``; it answers the same status, headers and body,
and names the route template for ``api.metrics`` as FastAPI's routing would.
``ApiProblem`` and ``IntentRequestError`` become problem answers here, as the
app's handlers would make them; any other exception goes up to the app's
``ServerErrorMiddleware`` (a logged 500), as from a route.

Why: on these operations FastAPI's routing and dependency solving took about a
third of the process's time per request (profiles in bench/api_throughput.py).
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from intentd.api.context import Services, json_response
from intentd.api.intents.routes import create_record, read_by_address, read_by_id
from intentd.api.metrics import ROUTE_KEY
from intentd.api.problems import ApiProblem, from_request_error
from intentd.intents.validation import IntentRequestError

__all__ = ["HotPath"]

_ID = re.compile(r"[1-9][0-9]{0,18}")
_MAX_ID = 2**63 - 1
_ADDRESS = re.compile(r"[0-9A-Za-z]{1,64}")
_IDEMPOTENCY_KEY = re.compile(rb"[\x21-\x7e]{1,255}")
_BY_ADDRESS = "by-address/"


class HotPath:
    """ASGI middleware in front of the app's routes (inside its error handling)."""

    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app = app
        self._intents = prefix + "/intents"
        self._intent = prefix + "/intents/"
        self._by_id = prefix + "/intents/{intent_id}"
        self._by_address = prefix + "/intents/by-address/{intent_address}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            method, path = scope["method"], scope["path"]
            if method == "GET" and path.startswith(self._intent):
                rest = path[len(self._intent) :]
                if _ID.fullmatch(rest) and int(rest) <= _MAX_ID:
                    scope[ROUTE_KEY] = self._by_id
                    await self._read(scope, receive, send, intent_id=int(rest))
                    return
                if rest.startswith(_BY_ADDRESS) and _ADDRESS.fullmatch(rest[len(_BY_ADDRESS) :]):
                    scope[ROUTE_KEY] = self._by_address
                    await self._read(scope, receive, send, address=rest[len(_BY_ADDRESS) :])
                    return
            elif method == "POST" and path == self._intents:
                keys = [v for k, v in scope["headers"] if k == b"idempotency-key"]
                if not keys or (len(keys) == 1 and _IDEMPOTENCY_KEY.fullmatch(keys[0])):
                    key = keys[0].decode("ascii") if keys else None
                    scope[ROUTE_KEY] = self._intents
                    await self._create(scope, receive, send, key)
                    return
        await self.app(scope, receive, send)

    async def _read(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        *,
        intent_id: int | None = None,
        address: str | None = None,
    ) -> None:
        services: Services = scope["app"].state.services
        try:
            caller = await services.auth.api_key(
                _authorization(scope), services.auth.source_of(scope)
            )
            caller.require_scope("GET", scope[ROUTE_KEY])
            if intent_id is not None:
                record = await read_by_id(services, caller, intent_id)
            else:
                assert address is not None
                record = await read_by_address(services, caller, address)
        except (ApiProblem, IntentRequestError) as exc:
            await _problem(exc, scope, receive, send)
            return
        await json_response(record)(scope, receive, send)

    async def _create(self, scope: Scope, receive: Receive, send: Send, key: str | None) -> None:
        services: Services = scope["app"].state.services
        try:
            caller = await services.auth.api_key(
                _authorization(scope), services.auth.source_of(scope)
            )
            caller.require_scope("POST", self._intents)
            record = await create_record(Request(scope, receive), caller, key)
        except (ApiProblem, IntentRequestError) as exc:
            await _problem(exc, scope, receive, send)
            return
        await json_response(record, 201)(scope, receive, send)


async def _problem(
    exc: ApiProblem | IntentRequestError, scope: Scope, receive: Receive, send: Send
) -> None:
    """The answer the app's exception handlers give (``app._install_handlers``)."""
    problem = exc if isinstance(exc, ApiProblem) else from_request_error(exc)
    await problem.response(scope["path"])(scope, receive, send)


def _authorization(scope: Scope) -> str | None:
    """The first ``Authorization`` header, as ``request.headers.get`` reads it."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            text: str = value.decode("latin-1")
            return text
    return None
