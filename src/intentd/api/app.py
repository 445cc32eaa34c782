"""The ASGI application: routes under ``/api/v1``, problem answers, the OpenAPI document.

Every failure is answered as ``application/problem+json`` (``api.problems``); an
exception no handler expects is a bug, logged with its traceback and answered 500
with code ``internal`` (never with its message). A database away is not one: every
use of it goes through ``api.connections.Database``, which answers 503 problems
while the process's :class:`~intentd.supervision.Health` knows PostgreSQL is down (the
one watch of every role of the process; an app given none watches it itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import structlog
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from intentd import __version__
from intentd.adapters import intent_store
from intentd.adapters.evm.price_feeds import running_prices
from intentd.adapters.library_logs import QuietLibraryLogs
from intentd.adapters.postgres import Pool, create_pool
from intentd.adapters.probes import PostgresProbe
from intentd.adapters.relayer_float import PostgresFloatSource
from intentd.api import (
    refund_approvals,
    routes_chains,
    routes_events,
    routes_intent_commands,
    routes_intent_list,
    routes_intents,
    routes_quotes,
    routes_reports,
    routes_sessions,
    routes_webhooks,
    sdk_routes,
)
from intentd.api.auth import Authenticator
from intentd.api.batched_reads import BatchedReads
from intentd.api.capacity import InFlightLimit
from intentd.api.connections import Database, database_cadence
from intentd.api.context import API_PREFIX, Services
from intentd.api.hot_path import HotPath
from intentd.api.intent_writes import AnsweringWriter
from intentd.api.metrics import RequestMetrics
from intentd.api.models import IntentCreate, SessionCreate, SessionIntentCreate
from intentd.api.openapi_links import add_links
from intentd.api.problems import PROBLEM_JSON, ApiProblem, from_request_error
from intentd.api.processing import Processor
from intentd.api.query import single_valued_query
from intentd.intents.admission import LiquidityGate
from intentd.intents.validation import IntentRequestError
from intentd.pay.routes import PayHeaders, pay_router
from intentd.pricing import PriceSource
from intentd.settings import Settings
from intentd.supervision import POSTGRESQL, Health

__all__ = ["API_PREFIX", "create_app"]

log = structlog.get_logger()
_REQUEST_MODELS = (IntentCreate, SessionCreate, SessionIntentCreate)


def create_app(
    settings: Settings,
    *,
    pool: Pool | None = None,
    prices: PriceSource | None = None,
    health: Health | None = None,
    on_readiness: Callable[[bool], None] | None = None,
    extensions: Sequence[Callable[[FastAPI], None]] = (),
) -> FastAPI:
    """The API; ``pool`` may be given (tests) and is then not closed, so may ``prices``
    (else the config's feeds are read in the background, ``adapters.evm.price_feeds``).
    ``health`` is the process's, which runs it and probes PostgreSQL at least as
    closely as the API needs (``api.connections.database_cadence``); without one the
    app watches PostgreSQL itself while it serves (tests). ``on_readiness`` hears
    True once the services are up, then False while the database is down and True
    again once it answers. ``extensions`` add their routes and middleware to the app
    before the API's own middleware (the console, ``console.mount``)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            db = pool
            if db is None:
                db = await create_pool(
                    settings.database.url.get_secret_value(),
                    min_size=settings.database.min_pool,
                    max_size=settings.database.max_pool,
                    session_reset=False,  # the API leaves no session state behind
                )
                stack.push_async_callback(db.close)
            watching = health
            if watching is None:
                watching = await stack.enter_async_context(_watching_alone(settings))
            database = Database.of(settings, db, health=watching)
            if prices is None:  # feeds refreshed in the background (docs/pricing.md)
                quoting: PriceSource = await stack.enter_async_context(running_prices(settings))
            else:
                quoting = prices
            processor = Processor(settings, database, prices=quoting)
            stack.push_async_callback(processor.close)
            gate = LiquidityGate(settings)
            if gate.enabled:
                source = PostgresFloatSource(database.pool, timeout=settings.api.db_acquire_timeout)
                following = asyncio.create_task(gate.follow(source), name="liquidity view")
                following.add_done_callback(_view_stopped)
                stack.push_async_callback(_cancelled, following)
            app.state.services = Services(
                settings=settings,
                database=database,
                auth=Authenticator(settings, database),
                processor=processor,
                prices=quoting,
                writer=AnsweringWriter(
                    database,
                    settings.intent_addresses(),
                    gate=gate if gate.enabled else None,
                    max_waiting=settings.api.max_waiting_creates,
                    max_pending=settings.intents.max_open_per_client,
                ),
                intents_by_id=BatchedReads(database.connection, intent_store.get_many_by_id),
                intents_by_address=BatchedReads(
                    database.connection, intent_store.get_many_by_address
                ),
                liquidity=gate,
            )
            if on_readiness is not None:
                watching.listen(POSTGRESQL, on_readiness)
                stack.callback(watching.unlisten, POSTGRESQL, on_readiness)
                on_readiness(not watching.is_down(POSTGRESQL))
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
        routes_quotes.router,
        routes_intent_list.router,
        routes_intents.router,
        routes_intent_commands.router,
        refund_approvals.router,
        routes_sessions.router,
        routes_events.router,
        routes_webhooks.router,
        routes_reports.router,
        routes_chains.router,
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


@asynccontextmanager
async def _watching_alone(settings: Settings) -> AsyncIterator[Health]:
    """A health of the app's own, probing PostgreSQL as the API needs, while it serves;
    the libraries' lines kept to a few (an app outside a process of roles: tests)."""
    health = Health()
    probe = PostgresProbe(settings.database.url.get_secret_value(), timeout=settings.api.db_timeout)
    health.watch(POSTGRESQL, probe, cadence=database_cadence(settings))
    quiet = QuietLibraryLogs(health)
    quiet.install()
    stop = asyncio.Event()
    running = asyncio.create_task(health.run(stop), name="database watch")
    try:
        yield health
    finally:
        stop.set()
        await running
        quiet.remove()
        await probe.close()


def _view_stopped(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error(
            "the view of the relayer's float stopped; creates and quotes will be refused"
            " (liquidity_unknown) until the API restarts",
            error=repr(task.exception()),
        )


async def _cancelled(task: asyncio.Task[None]) -> None:
    """Stop the task; a failure of its own was logged when it ended."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


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
