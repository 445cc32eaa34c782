"""What one API process holds at most, and what it answers past that.

- Connections: at most ``api.max_connections`` open; one more is answered a 503
  problem with ``Retry-After`` and closed, before any of its request is read.
- Slow requests: a request's line and headers must arrive within
  ``api.header_timeout`` seconds of the connection opening (or, on a kept-alive
  connection, of the request's first byte); a client that stalls is disconnected.
  An idle kept-alive connection is closed after ``api.keep_alive_timeout``.
- Requests in flight: at most ``api.max_requests_in_flight`` handled at once; one
  more is answered a 503 problem with ``Retry-After`` at once (never queued).

Every 503 here is code ``overloaded``. The intent writer's own bound
(``api.max_waiting_creates``) is ``context.AnsweringWriter``'s.
"""

from __future__ import annotations

import asyncio

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from intentd.api.problems import PROBLEM_JSON, ApiProblem

__all__ = ["InFlightLimit", "guarded_protocol"]

RETRY_AFTER = "1"


def _overloaded(detail: str) -> ApiProblem:
    return ApiProblem(503, "overloaded", detail, headers={"Retry-After": RETRY_AFTER})


def _refusal(max_connections: int) -> bytes:
    """A whole HTTP/1.1 503 answer, written to a connection over the limit."""
    body = orjson.dumps(
        {
            "type": "urn:intentd:problem:overloaded",
            "title": "Service unavailable",
            "status": 503,
            "detail": f"the server holds {max_connections} connections; retry later",
            "code": "overloaded",
        }
    )
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        f"content-type: {PROBLEM_JSON}\r\n"
        f"retry-after: {RETRY_AFTER}\r\n"
        "connection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


def guarded_protocol(header_timeout: float, max_connections: int) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with a header timeout and a connection limit."""
    refusal = _refusal(max_connections)

    class Guarded(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None
        _refused = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()
            if len(self.connections) > max_connections:
                # Answer, then half-close: closing at once with the request unread
                # would reset the connection and lose the answer. The client's close
                # (or the header timer) ends it.
                self._refused = True
                transport.write(refusal)
                transport.write_eof()

        def data_received(self, data: bytes) -> None:
            if not self._refused:
                super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._header_timer is None:
                self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def _arm(self) -> None:
            self._header_timer = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return Guarded


class InFlightLimit:
    """ASGI middleware: at most ``limit`` HTTP requests inside ``app`` at once."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self._limit = limit
        self._in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._in_flight >= self._limit:
            problem = _overloaded(f"the server is handling {self._limit} requests; retry later")
            await problem.response(scope["path"])(scope, receive, send)
            return
        self._in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._in_flight -= 1
