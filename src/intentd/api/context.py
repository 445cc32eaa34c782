"""What every handler needs: the services of the process, and request-reading helpers.

:class:`Services` is built once per app by the composition root (``composition.api``),
which the app's lifespan runs; a handler takes what it needs from it
(:meth:`Services.of`) and builds no adapter or service of its own.

A JSON body is never held beyond ``MAX_BODY_BYTES``: a ``Content-Length`` over it is
refused before any of the body is read, and a body without one (chunked) is read
only until it passes the limit. Either way the answer is a 413 ``body_too_large``
problem, sent at once; whatever of the upload still arrives is discarded by the
server as it comes (never held).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson
from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.responses import Response

from intentd.adapters.postgres import Connection
from intentd.api.batched_reads import BatchedReads
from intentd.api.callers.auth import Authenticator
from intentd.api.connections import Database
from intentd.api.problems import ApiProblem
from intentd.api.processing import Processor
from intentd.contract.record import IntentRow
from intentd.intents.admission import LiquidityGate
from intentd.intents.writer import IntentWriter
from intentd.merchant.intent_commands import IntentCommands
from intentd.pricing import PriceSource
from intentd.reports.ports import ReportReader
from intentd.settings import Settings

__all__ = [
    "API_PREFIX",
    "BODY_NAMES",
    "MAX_BODY_BYTES",
    "Services",
    "idempotency_key",
    "json_response",
    "read_body",
]

API_PREFIX = "/api/v1"
"""Where every route is; its routers carry it, so a route's ``path`` is the full template."""
MAX_BODY_BYTES = 64 * 1024
BODY_NAMES = "intentd.body_names"
"""Scope key: how a route renames a client's body fields before validation."""
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
_Model = TypeVar("_Model", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    database: Database
    auth: Authenticator
    processor: Processor
    prices: PriceSource
    writer: IntentWriter
    """New intents, committed together when they arrive together; derivation indexes
    drawn in blocks."""
    intents_by_id: BatchedReads[int, IntentRow]
    intents_by_address: BatchedReads[str, IntentRow]
    """Intent reads of concurrent requests, one statement per batch (by lower-case address)."""
    liquidity: LiquidityGate
    """The relayer's float as last loaded from PostgreSQL (never read from RPC here)."""
    intent_commands: IntentCommands
    """The lifecycle's cancel and refund, on the process's chain book."""
    reports: Callable[[Connection], ReportReader]
    """The reports' reads over a connection, inside a snapshot the caller holds."""

    @staticmethod
    def of(request: Request) -> Services:
        services: Services = request.app.state.services
        return services

    @staticmethod
    def now() -> datetime:
        return datetime.now(UTC)

    def connection(self) -> AbstractAsyncContextManager[Connection]:
        """A pooled connection, its wait and its work bounded; 503 problems when the
        database is busy or away (``api.connections``)."""
        return self.database.connection()


def json_response(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


async def read_body(request: Request, model: type[_Model]) -> _Model:
    """The JSON body as ``model``; 413, 415 or 400 problems otherwise. A route may set
    ``scope[BODY_NAMES]`` (a client's field name: ours, or None to leave the field out),
    read before validation (``api.sdk_routes``)."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise ApiProblem(415, "unsupported_media_type", "send the body as application/json")
    body = await _capped_body(request)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ApiProblem(400, "malformed_json", f"the body is not valid JSON: {exc}") from None
    names: Mapping[str, str | None] | None = request.scope.get(BODY_NAMES)
    if names and isinstance(data, dict):
        data = _renamed(data, names)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_problem(exc, "body") from None


def _renamed(data: dict[str, Any], names: Mapping[str, str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = names.get(key, key)
        if name is None:
            continue
        if name in out:
            raise ApiProblem(
                400, "validation_error", f"{name}: given twice (as {key} too)", field=name
            )
        out[name] = value
    return out


def _too_large() -> ApiProblem:
    return ApiProblem(413, "body_too_large", f"the body exceeds {MAX_BODY_BYTES} bytes")


async def _capped_body(request: Request) -> bytes:
    """The body, read only while it stays within ``MAX_BODY_BYTES``."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY_BYTES:  # the server checked its form
        raise _too_large()
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > MAX_BODY_BYTES:
            raise _too_large()
        parts.append(part)
    return b"".join(parts)


def validation_problem(exc: ValidationError, where: str) -> ApiProblem:
    errors = [
        {
            "field": ".".join(str(p) for p in error["loc"]) or where,
            "code": error["type"],
            "message": error["msg"],
        }
        for error in exc.errors(include_url=False, include_input=False, include_context=False)
    ]
    first = errors[0] if errors else {"field": where, "message": "invalid"}
    return ApiProblem(
        400,
        "validation_error",
        f"{first['field']}: {first['message']}",
        field=str(first["field"]),
        errors=errors,
    )


def idempotency_key(request: Request) -> str | None:
    value = request.headers.get("idempotency-key")
    if value is None:
        return None
    if not _IDEMPOTENCY_KEY.match(value):
        raise ApiProblem(
            400,
            "invalid_idempotency_key",
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
            field="Idempotency-Key",
        )
    return value
