"""The ASGI application: routes under ``/api/v1``, problem answers, the OpenAPI document.

Every failure is answered as ``application/problem+json`` (``api.problems``); an
exception no handler expects is a bug, logged with its traceback and answered 500
with code ``internal`` (never with its message). A database away is not one: every
use of it goes through ``api.connections.Database``, which answers 503 problems
while the process's :class:`~intentd.supervision.Health` knows PostgreSQL is down (the
one watch of every role of the process).

The app builds no service or adapter: the composition root (``composition.api``)
does, and the app's lifespan opens them (``create_app``'s ``services``).
"""

from __future__ import annotations

import traceback
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import structlog
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from intentd import __version__
from intentd.api import sdk_routes
from intentd.api.capacity import InFlightLimit
from intentd.api.chains import routes as chains
from intentd.api.context import API_PREFIX, Services
from intentd.api.events import routes as events
from intentd.api.hot_path import HotPath
from intentd.api.intents import commands as intent_commands
from intentd.api.intents import listing as intent_list
from intentd.api.intents import refund_approvals
from intentd.api.intents import routes as intents
from intentd.api.metrics import RequestMetrics
from intentd.api.models import IntentCreate, SessionCreate, SessionIntentCreate
from intentd.api.openapi.links import add_links
from intentd.api.problems import PROBLEM_JSON, ApiProblem, from_request_error
from intentd.api.query import single_valued_query
from intentd.api.quotes import routes as quotes
from intentd.api.reports import routes as reports
from intentd.api.sessions import routes as sessions
from intentd.api.webhooks import routes as webhooks
from intentd.intents.validation import IntentRequestError
from intentd.pay.routes import PayHeaders, pay_router
from intentd.settings import Settings

__all__ = ["API_PREFIX", "ServicesFactory", "create_app"]

log = structlog.get_logger()
_REQUEST_MODELS = (IntentCreate, SessionCreate, SessionIntentCreate)

ServicesFactory = Callable[[], AbstractAsyncContextManager[Services]]
"""Opens the app's services for as long as it serves (``composition.api.api_services``)."""


def create_app(
    settings: Settings,
    services: ServicesFactory | None = None,
    *,
    extensions: Sequence[Callable[[FastAPI], None]] = (),
) -> FastAPI:
    """The API's routes, middleware and problem answers. Its lifespan opens
    ``services`` (built by the composition root, ``composition.api``) and holds them in
    ``app.state.services`` while it serves; without any, the app only describes itself
    (routes, the OpenAPI document) and its lifespan refuses to start. ``extensions``
    add their routes and middleware to the app before the API's own middleware (the
    console, ``console.mount``)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if services is None:
            raise RuntimeError("an app without services describes the API; it cannot serve")
        async with services() as built:
            app.state.services = built
            yield

    app = FastAPI(
        title="intentd payment intent API",
        version=__version__,
        description="Cross-chain payment intents. See docs/api.md for every decision.",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
        lifespan=lifespan,
        dependencies=[Depends(single_valued_query)],
    )
    for router in (
        quotes.router,
        intent_list.router,
        intents.router,
        intent_commands.router,
        refund_approvals.router,
        sessions.router,
        events.router,
        webhooks.router,
        reports.router,
        chains.router,
        sdk_routes.router,  # the Chainrails SDK's paths for the operations above
    ):
        app.include_router(router)
    app.include_router(pay_router(settings))  # the payment modal and checkout page
    for extend in extensions:
        extend(app)
    app.add_middleware(HotPath, prefix=API_PREFIX)  # added first: inside CORS
    if settings.api.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.api.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Idempotency-Key"],
        )
    app.add_middleware(PayHeaders, frame_ancestors=settings.api.cors_origins)
    app.add_middleware(InFlightLimit, limit=settings.api.max_requests_in_flight)
    app.add_middleware(RequestMetrics)  # added last: the outermost
    _install_handlers(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _install_handlers(app: FastAPI) -> None:
    async def problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiProblem)
        return exc.response(request.url.path)

    async def request_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, IntentRequestError)
        return from_request_error(exc).response(request.url.path)

    async def validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = [
            {
                "field": str(error.get("loc", ("request",))[-1]),
                "in": str(error.get("loc", ("request",))[0]),
                "code": str(error.get("type", "invalid")),
                "message": str(error.get("msg", "invalid")),
            }
            for error in exc.errors()
        ]
        first = errors[0] if errors else {"field": "request", "message": "invalid"}
        return ApiProblem(
            400,
            "validation_error",
            f"{first['field']}: {first['message']}",
            field=first["field"],
            errors=errors,
        ).response(request.url.path)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        codes = {404: "not_found", 405: "method_not_allowed"}
        return ApiProblem(
            exc.status_code,
            codes.get(exc.status_code, "http_error"),
            str(exc.detail),
            headers=dict(exc.headers or {}),
        ).response(request.url.path)

    async def internal(request: Request, exc: Exception) -> Response:
        # The traceback as text, without frame locals: those hold headers (API keys).
        log.error(
            "unhandled error",
            path=request.url.path,
            error=type(exc).__name__,
            traceback="".join(traceback.format_exception(exc)),
        )
        return ApiProblem(500, "internal", "an internal error occurred").response(request.url.path)

    app.add_exception_handler(ApiProblem, problem)
    app.add_exception_handler(IntentRequestError, request_error)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, internal)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with the request bodies' schemas and problem media types."""
    if app.openapi_schema:
        return app.openapi_schema
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        servers=[{"url": "/"}],
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for model in _REQUEST_MODELS:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    for path in document["paths"].values():
        for operation in path.values():
            for status, answer in operation.get("responses", {}).items():
                content = answer.get("content", {})
                if int(status) >= 400 and "application/json" in content:
                    answer["content"] = {PROBLEM_JSON: content.pop("application/json")}
    add_links(document, API_PREFIX)
    app.openapi_schema = document
    return document
