"""The console's browser files, and the security headers of everything under ``/console``.

Every page path (``/console``, ``/console/payments/12``, ...) answers the same
``index.html``, which loads ``/console/assets/app.js``; the page's code reads the path.
Assets are the files of ``static/`` (plain ES modules and one stylesheet, no build
step), read and gzipped once when the router is made, revalidated by ETag on each use.

:class:`ConsoleHeaders` gives every answer under ``/console`` (pages, assets, the JSON
API, errors) a Content-Security-Policy without inline script or style and with
``frame-ancestors 'none'`` (no other page can frame the console), ``no-store`` for
the JSON, and the other headers below.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

from fastapi import APIRouter, Request
from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from intentd.console.web import CONSOLE_API, CONSOLE_PREFIX

__all__ = ["CONTENT_SECURITY_POLICY", "STATIC", "ConsoleHeaders", "asset_names", "pages_router"]

STATIC = Path(__file__).parent / "static"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


def asset_names() -> list[str]:
    """The served assets: every script and stylesheet of ``static/``."""
    return sorted(p.name for p in STATIC.iterdir() if p.suffix in _TYPES)


class _File:
    """A served file, compressed once (gzip) for browsers that take it."""

    def __init__(self, body: bytes, media_type: str) -> None:
        self.body = body
        self.gzipped = gzip.compress(body, compresslevel=9, mtime=0)
        self.media_type = media_type
        self.etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        self.headers = {"Cache-Control": "no-cache", "ETag": self.etag, "Vary": "Accept-Encoding"}

    def answer(self, request: Request) -> Response:
        given = request.headers.get("if-none-match", "")
        if self.etag in (tag.strip() for tag in given.split(",")):
            return Response(status_code=304, headers=self.headers)
        if "gzip" in request.headers.get("accept-encoding", ""):
            headers = {**self.headers, "Content-Encoding": "gzip"}
            return Response(self.gzipped, media_type=self.media_type, headers=headers)
        return Response(self.body, media_type=self.media_type, headers=self.headers)


def pages_router() -> APIRouter:
    router = APIRouter(prefix=CONSOLE_PREFIX, include_in_schema=False)
    index = _File((STATIC / "index.html").read_bytes(), "text/html; charset=utf-8")
    assets = {
        name: _File((STATIC / name).read_bytes(), _TYPES[Path(name).suffix])
        for name in asset_names()
    }

    @router.get("/assets/{name}")
    async def asset(request: Request, name: str) -> Response:
        found = assets.get(name)
        if found is None:
            return Response(b"not found", status_code=404, media_type="text/plain")
        return found.answer(request)

    @router.get("")
    @router.get("/{page:path}")
    async def page(request: Request, page: str = "") -> Response:
        if page == "api" or page.startswith("api/"):
            return Response(b"not found", status_code=404, media_type="text/plain")
        return index.answer(request)

    return router


class ConsoleHeaders:
    """ASGI middleware: the security headers of every answer under ``/console``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._headers = {
            "Content-Security-Policy": CONTENT_SECURITY_POLICY,
            "X-Frame-Options": "DENY",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cross-Origin-Opener-Policy": "same-origin",
            "Cross-Origin-Resource-Policy": "same-origin",
            "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path != CONSOLE_PREFIX and not path.startswith(CONSOLE_PREFIX + "/"):
            await self.app(scope, receive, send)
            return
        api = path.startswith(CONSOLE_API + "/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self._headers.items():
                    headers[name] = value
                if api:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        await self.app(scope, receive, with_headers)
