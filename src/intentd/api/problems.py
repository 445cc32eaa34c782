"""Errors as RFC 9457 problem details (``application/problem+json``) with a stable ``code``.

Every failure the API answers carries ``type`` (``urn:intentd:problem:<code>``),
``title``, ``status``, ``detail`` and ``code``; a request error adds ``field``, and a
body or parameter that does not fit the schema adds ``errors`` (one per problem).
The codes are part of the API contract (docs/api.md lists them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from starlette.responses import Response

from intentd.intents.validation import IntentConflict, IntentRequestError

__all__ = [
    "PROBLEM_JSON",
    "ApiProblem",
    "database_busy",
    "from_request_error",
    "problem_response",
]

PROBLEM_JSON = "application/problem+json"

TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Payload too large",
    415: "Unsupported media type",
    422: "Request cannot be processed",
    429: "Too many requests",
    500: "Internal error",
    503: "Service unavailable",
}


class ApiProblem(Exception):
    """Raise to answer with a problem document."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        field: str | None = None,
        headers: Mapping[str, str] | None = None,
        errors: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.field = field
        self.headers = dict(headers or {})
        self.errors = list(errors) if errors is not None else None

    def response(self, instance: str | None = None) -> Response:
        body: dict[str, Any] = {
            "type": f"urn:intentd:problem:{self.code}",
            "title": TITLES.get(self.status, "Error"),
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        }
        if instance is not None:
            body["instance"] = instance
        if self.field is not None:
            body["field"] = self.field
        if self.errors is not None:
            body["errors"] = self.errors
        return Response(
            orjson.dumps(body),
            status_code=self.status,
            media_type=PROBLEM_JSON,
            headers=self.headers,
        )


def database_busy() -> ApiProblem:
    """No database connection came free within ``api.db_acquire_timeout``: a 503 with
    ``Retry-After``, nothing of the request done."""
    return ApiProblem(
        503,
        "database_busy",
        "no database connection came free in time; retry after Retry-After seconds",
        headers={"Retry-After": "1"},
    )


def problem_response(status: int, code: str, detail: str, **extra: Any) -> Response:
    return ApiProblem(status, code, detail, **extra).response()


UNAVAILABLE_CODES = {"price_unavailable": "5"}
"""Request errors that are the server's state, not the request's: 503 with the
``Retry-After`` given (docs/pricing.md: a price refused now may be trusted again soon)."""


def from_request_error(exc: IntentRequestError) -> ApiProblem:
    """A rejected intent or quote request: 409 for a conflict with what is stored (a
    reused idempotency key, the client's cap of open intents), 503 for a price that
    cannot be trusted now, else 422."""
    if exc.code in UNAVAILABLE_CODES:
        headers = {"Retry-After": UNAVAILABLE_CODES[exc.code]}
        return ApiProblem(503, exc.code, str(exc), field=exc.field, headers=headers)
    status = 409 if isinstance(exc, IntentConflict) else 422
    return ApiProblem(status, exc.code, str(exc), field=exc.field)
