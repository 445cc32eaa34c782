"""What the ``/api/v1/webhooks`` routes share: rendering, cursors, URL checks, the
documented problem answers (``api.webhooks.routes``)."""

from __future__ import annotations

import asyncio
import base64
import socket
from datetime import datetime
from typing import Any
from uuid import UUID

from intentd.adapters.postgres import webhook_endpoints as store
from intentd.adapters.postgres.webhook_endpoints import AttemptRow, Endpoint
from intentd.adapters.postgres.webhook_send_budgets import take_send_call
from intentd.api.callers.auth import Caller
from intentd.api.callers.security import errors
from intentd.api.context import Services
from intentd.api.models import Problem
from intentd.api.problems import ApiProblem
from intentd.contract.mode import Mode
from intentd.settings import ConfigError
from intentd.webhooks import send_budget
from intentd.webhooks.secret_box import SecretBox, secret_box
from intentd.webhooks.targets import TargetRefused, check_url, refusal

__all__ = [
    "bad_cursor",
    "checked_url",
    "checked_url_of_mode",
    "decode_cursor",
    "encode_cursor",
    "endpoint_of",
    "not_found",
    "render",
    "render_attempt",
    "require_enabled",
    "responses",
    "sealing_box",
    "spend_client_send_call",
    "spend_send_call",
]

_RESOLVE_SECONDS = 5.0


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def render(endpoint: Endpoint) -> dict[str, Any]:
    return {
        "id": str(endpoint.id),
        "url": endpoint.url,
        "description": endpoint.description,
        "event_types": endpoint.event_types,
        "mode": endpoint.mode,
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason,
        "disabled_at": _time(endpoint.disabled_at),
        "failing_since": _time(endpoint.failing_since),
        "previous_secret_expires_at": _time(endpoint.previous_secret_expires_at),
        "created_at": _time(endpoint.created_at),
        "updated_at": _time(endpoint.updated_at),
    }


def render_attempt(attempt: AttemptRow) -> dict[str, Any]:
    return {
        "id": attempt.id,
        "delivery_id": attempt.delivery_id,
        "event_id": attempt.event_id,
        "event_type": attempt.event_type,
        "delivery_status": attempt.delivery_status,
        "attempted_at": _time(attempt.attempted_at),
        "status_code": attempt.status_code,
        "latency_ms": attempt.latency_ms,
        "error": attempt.error,
        "response": attempt.response_head,
        "outcome": attempt.outcome,
        "next_attempt_at": _time(attempt.next_attempt_at),
    }


def sealing_box(services: Services) -> SecretBox:
    try:
        return secret_box(services.settings)
    except ConfigError:
        raise ApiProblem(
            503, "webhooks_disabled", "webhooks are not configured on this deployment"
        ) from None


def not_found(endpoint_id: UUID) -> ApiProblem:
    return ApiProblem(404, "webhook_not_found", f"no webhook endpoint {endpoint_id} for this key")


async def checked_url(services: Services, caller: Caller, url: str) -> str:
    """``url`` if an endpoint of the caller's mode may use it; 422 problems otherwise."""
    return await checked_url_of_mode(services, caller.key.mode, url)


async def checked_url_of_mode(services: Services, mode: Mode, url: str) -> str:
    """``url`` if an endpoint of ``mode`` may use it; 422 problems otherwise."""
    allow_private = services.settings.webhooks.allow_private_targets
    try:
        target = check_url(url, mode, allow_private=allow_private)
    except TargetRefused as exc:
        raise ApiProblem(422, exc.code, str(exc), field="url") from None
    if target.literal is not None or allow_private:
        return url
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM), _RESOLVE_SECONDS
        )
    except (OSError, TimeoutError):
        raise ApiProblem(
            422, "webhook_url_unresolvable", f"{target.host} does not resolve", field="url"
        ) from None
    for info in infos:
        address = str(info[4][0])
        why = refusal(address)
        if why is not None:
            raise ApiProblem(
                422,
                "webhook_url_forbidden",
                f"{target.host} resolves to {address}, a {why} address",
                field="url",
            )
    return url


async def endpoint_of(services: Services, caller: Caller, endpoint_id: UUID) -> Endpoint:
    async with services.connection() as conn:
        endpoint = await store.get(conn, caller.client_id, caller.key.mode, endpoint_id)
    if endpoint is None:
        raise not_found(endpoint_id)
    return endpoint


def encode_cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        raise bad_cursor() from None


def bad_cursor() -> ApiProblem:
    return ApiProblem(
        400, "invalid_cursor", "cursor is not a next_cursor of this list", field="cursor"
    )


_OWN_DESCRIPTIONS = {
    404: "No such endpoint (or delivery) for this key's client and mode",
    409: (
        "The endpoint is disabled (webhook_disabled: test, redeliver, recover), or the"
        " client has its maximum of endpoints in this mode (too_many_webhooks: create)"
    ),
    422: "The URL is refused (webhook_url_*), or a value is unusable",
    503: (
        "Webhooks are not configured on this deployment (webhooks_disabled), or the"
        " database is unavailable or busy (database_unavailable, database_busy: retry"
        " after Retry-After)"
    ),
}
_SENDS_LIMITED = (
    "; webhook_sends_rate_limited: the client's test, redeliver and recover calls"
    " (webhooks.send_calls_per_minute)"
)


def responses(*statuses: int, sends: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI answers of an operation: the common ones plus ``statuses`` (``sends``:
    the operation spends the client's send calls, its 429 says so)."""
    shared = [s for s in statuses if s not in _OWN_DESCRIPTIONS]
    documented = errors(*shared)
    for status in (*statuses, 422):
        if status in _OWN_DESCRIPTIONS:
            documented[status] = {
                **documented.get(status, {}),  # its headers (Retry-After of a 503)
                "model": Problem,
                "description": _OWN_DESCRIPTIONS[status],
            }
    if sends:
        limited = documented[429]
        documented[429] = {**limited, "description": limited["description"] + _SENDS_LIMITED}
    return documented


async def spend_send_call(services: Services, caller: Caller) -> None:
    """Count a test, redeliver or recover call against the client's budget; a 429
    ``webhook_sends_rate_limited`` with ``Retry-After`` when it is spent."""
    await spend_client_send_call(services, caller.client_id)


async def spend_client_send_call(services: Services, client_id: UUID) -> None:
    """:func:`spend_send_call` for a client (the console's calls spend the same budget)."""
    per_minute = services.settings.webhooks.send_calls_per_minute
    async with services.connection() as conn:
        wait = await take_send_call(conn, client_id, per_minute)
    if wait > 0:
        seconds = send_budget.retry_after(wait)
        raise ApiProblem(
            429,
            "webhook_sends_rate_limited",
            f"this client's test, redeliver and recover calls are limited to {per_minute}"
            f" a minute; retry after {seconds} s",
            headers={"Retry-After": str(seconds)},
        )


def require_enabled(endpoint: Endpoint) -> None:
    if not endpoint.enabled:
        raise ApiProblem(
            409,
            "webhook_disabled",
            f"the endpoint is disabled ({endpoint.disabled_reason}); enable it first",
        )
