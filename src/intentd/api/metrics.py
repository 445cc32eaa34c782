"""Prometheus figures of every API request: count by route and status, latency, in flight.

The ``route`` label is the route's template (``/api/v1/intents/{intent_id}``), never
the requested path, so ids and addresses do not become label values; a request no
route matched is ``unmatched``. The status is the one answered; ``499`` counts a
request whose client went away while its body was read (uvicorn does not interrupt
a request whose client leaves later: it counts with the status it got) or that
uvicorn cancelled at shutdown; one that raised before answering counts as ``500``
(the app then answers 500). The latency runs from the request's
arrival at the app to the end of its answer.
"""

from __future__ import annotations

import asyncio
import time

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from intentd import observability as metrics

__all__ = ["ROUTE_KEY", "RequestMetrics"]

ROUTE_KEY = "intentd.route"
"""Scope key where a middleware that answers by itself (``HotPath``) names its route."""
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestMetrics:
    """ASGI middleware; the outermost of the app's own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        metrics.API_IN_FLIGHT.inc()
        try:
            await self.app(scope, receive, sending)
        except ClientDisconnect:
            # Gone while its body was read: nobody to answer, and not an error of ours
            # (left to the app's handlers, it would be logged as an unhandled 500).
            status = status or 499
        except asyncio.CancelledError:  # uvicorn cancels what runs at its shutdown
            status = status or 499
            raise
        except BaseException:
            status = status or 500
            raise
        finally:
            metrics.API_IN_FLIGHT.dec()
            method = scope["method"] if scope["method"] in _METHODS else "other"
            route = _route(scope)
            metrics.API_REQUESTS.labels(method, route, str(status or 500)).inc()
            metrics.API_SECONDS.labels(method, route).observe(time.perf_counter() - started)


def _route(scope: Scope) -> str:
    named = scope.get(ROUTE_KEY)
    if isinstance(named, str):
        return named
    path = getattr(scope.get("route"), "path", None)  # FastAPI's matched APIRoute
    return path if isinstance(path, str) else "unmatched"
