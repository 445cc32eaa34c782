"""The Chainrails SDK's paths (``@chainrails/sdk`` 0.3.7) as aliases of our operations.

A merchant moving from Chainrails changes only the SDK's base URL to intentd's
``/api/v1``. Where the SDK's path is ours (``POST /intents``, ``GET /intents/{id}``,
trigger-processing, ``GET /quotes/multi-source``, ``GET /chains``, ``GET /intents``)
nothing here is needed. Every other call the SDK makes that we can serve is a route
to the same handler as our path (one implementation), declared here with:

- the SDK's body field names mapped to ours before validation (``BODY_NAMES``), a
  field we do not take from the SDK dropped (the modal's ``metadata``: what a payer
  types must not land in the merchant's records);
- the SDK's answer fields added to a 2xx answer of ours (``POST /modal/sessions``
  adds ``sessionToken``, ``sessionId``, ``expiresAt``).

Guarantees: an alias authenticates, rate-limits and validates exactly as our path
(same handler, same dependencies), and answers our record shapes, with our chain
names (``chain_names``). Aliases are left out of the OpenAPI document; docs/api.md
("Chainrails SDK compatibility") lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Request
from fastapi.routing import APIRoute
from starlette.responses import Response

from intentd.adapters.postgres.intent_list import IntentFilter
from intentd.api.callers.security import ApiCaller
from intentd.api.context import API_PREFIX, BODY_NAMES, Services, json_response
from intentd.api.intents import routes as routes_intents
from intentd.api.intents.listing import MAX_LIMIT, read_page, usable_chains
from intentd.api.sessions import routes as routes_sessions
from intentd.intents.validation import check_address

__all__ = ["SdkRoute", "router"]

Answer = Callable[[Any], Any]


class SdkRoute(APIRoute):
    """An alias: the handler of our operation, with the SDK's names mapped in and out."""

    def __init__(
        self,
        path: str,
        endpoint: Callable[..., Any],
        *,
        body_names: Mapping[str, str | None] | None = None,
        answer: Answer | None = None,
        **kwargs: Any,
    ) -> None:
        self.body_names = body_names  # read by get_route_handler, called by APIRoute
        self.answer = answer
        super().__init__(path, endpoint, include_in_schema=False, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        body_names, answer = self.body_names, self.answer

        async def route(request: Request) -> Response:
            if body_names:
                request.scope[BODY_NAMES] = body_names
            response = await handler(request)
            if answer is None or not 200 <= response.status_code < 300:
                return response
            renamed = json_response(answer(orjson.loads(response.body)), response.status_code)
            for name, value in response.headers.items():
                if name not in ("content-length", "content-type"):
                    renamed.headers.append(name, value)
            return renamed

        return route


def _session_answer(body: dict[str, Any]) -> dict[str, Any]:
    """Our session plus the SDK's names for its token, id and expiry."""
    return {
        **body,
        "sessionToken": body["session_token"],
        "sessionId": body["session_id"],
        "expiresAt": body["expires_at"],
    }


router = APIRouter(prefix=API_PREFIX, tags=["chainrails sdk"])


@router.get("/intents/user/{sender}", include_in_schema=False)
async def by_sender(
    request: Request,
    caller: ApiCaller,
    sender: Annotated[str, Path(max_length=64, description="the payer's address")],
) -> Response:
    """The SDK's ``intents.getForSender``: the newest intents (at most 100) whose
    ``sender`` is this address, as an array; ``GET /intents?sender=`` pages them all."""
    services = Services.of(request)
    where = IntentFilter(
        client_id=caller.client_id,
        source_chains=usable_chains(services.settings, caller),
        sender=check_address(sender, "sender"),
    )
    page = await read_page(services, where, limit=MAX_LIMIT)
    return json_response(page["data"])


_ALIASES: list[tuple[str, str, Callable[..., Any], dict[str, Any]]] = [
    ("GET", "/intents/address/{intent_address}", routes_intents.by_address, {}),
    ("POST", "/modal/sessions", routes_sessions.create_session, {
        "body_names": {"tokenOut": "token"},
        "answer": _session_answer,
    }),
    ("GET", "/modal/sessions/client", routes_sessions.session_client, {}),
    ("GET", "/modal/sessions/quotes", routes_sessions.session_quotes, {}),
    ("POST", "/modal/sessions/intents", routes_sessions.session_intent, {
        "body_names": {
            "sourceChain": "source_chain",
            "refundAddress": "refund_address",
            "metadata": None,
        },
    }),
    ("GET", "/modal/sessions/intents/{intent_address}", routes_sessions.session_read, {}),
    (
        "POST",
        "/modal/sessions/intents/{intent_address}/process",
        routes_sessions.payment_made,
        {},
    ),
]  # fmt: skip

for _method, _path, _endpoint, _options in _ALIASES:
    router.routes.append(SdkRoute(API_PREFIX + _path, _endpoint, methods=[_method], **_options))
