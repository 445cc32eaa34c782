"""``/pay``: the payment modal's scripts and the hosted checkout page (docs/payment-modal.md).

What is served, all public and never secret (the session token travels in the URL
fragment, which browsers do not send to servers):

- ``/pay/modal.js``: the modal as an ES module (``export openPayment``), and
  ``/pay/pay.js``: the same code as a classic script (``window.IntentdPay``); both
  are ``static/modal-core.js`` with a line that finds intentd's address from the
  script's own URL. Cross-origin loading is allowed (module scripts need CORS).
- ``/pay/checkout``: the checkout page (the payment link, and the modal's frame);
  ``/pay/assets/NAME``: its scripts and styles; ``/pay/config.json``: each chain's
  id, network class and native coin, which the page needs for EIP-681 URIs and the
  test-network "I have made payment" action.

The files are read once, when the router is made. :class:`PayHeaders` puts the
Content-Security-Policy and the other security headers on every answer under
``/pay``, errors included.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
from fastapi import APIRouter, Request
from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from intentd.settings import NATIVE_TOKEN, Settings

__all__ = ["PAY_PREFIX", "PayHeaders", "content_security_policy", "modal_scripts", "pay_router"]

PAY_PREFIX = "/pay"
STATIC = Path(__file__).parent / "static"
ASSETS = (
    "api.js",
    "checkout.css",
    "checkout.js",
    "payment.js",
    "qr.js",
    "strings.js",
    "theme.js",
    "view.js",
)
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
}
_ESM_TAIL = (
    "\nconst openPayment = createOpenPayment(new URL('./', import.meta.url).href);\n"
    "export { openPayment };\nexport default openPayment;\n"
)
_CLASSIC_HEAD = "(function () {\n'use strict';\n"
_CLASSIC_TAIL = (
    "\nvar script = document.currentScript;\n"
    "window.IntentdPay = { openPayment: createOpenPayment(new URL('./', script.src).href) };\n"
    "})();\n"
)


def modal_scripts() -> dict[str, bytes]:
    """``modal.js`` (ES module) and ``pay.js`` (classic script), made from one source."""
    core = (STATIC / "modal-core.js").read_text()
    return {
        "modal.js": (core + _ESM_TAIL).encode(),
        "pay.js": (_CLASSIC_HEAD + core + _CLASSIC_TAIL).encode(),
    }


def content_security_policy(frame_ancestors: list[str]) -> str:
    """The policy of everything under ``/pay``: only intentd's own scripts, styles and
    API; embeddable by ``frame_ancestors`` (every site when empty)."""
    ancestors = " ".join(frame_ancestors) if frame_ancestors else "*"
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; "
        f"frame-ancestors {ancestors}"
    )


def _chains(settings: Settings) -> dict[str, object]:
    return {
        "native_token": NATIVE_TOKEN,
        "chains": {
            name: {
                "chain_id": chain.chain_id,
                "network": chain.network,
                "native_symbol": chain.native.symbol,
            }
            for name, chain in settings.chains.items()
        },
    }


class _File:
    """A served file: its bytes and validator. Browsers revalidate each use
    (``no-cache`` and an ETag), so an upgrade of intentd never mixes old and new files."""

    def __init__(self, body: bytes, media_type: str, *, cors: bool = False) -> None:
        self.body = body
        self.media_type = media_type
        self.etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        self.headers = {"Cache-Control": "no-cache", "ETag": self.etag}
        if cors:
            self.headers["Access-Control-Allow-Origin"] = "*"

    def answer(self, request: Request) -> Response:
        given = request.headers.get("if-none-match", "")
        if self.etag in (tag.strip() for tag in given.split(",")):
            return Response(status_code=304, headers=self.headers)
        return Response(self.body, media_type=self.media_type, headers=self.headers)


def pay_router(settings: Settings) -> APIRouter:
    """The routes of ``/pay`` (left out of the API's OpenAPI document)."""
    router = APIRouter(prefix=PAY_PREFIX, include_in_schema=False)
    scripts = modal_scripts()
    files = {
        "modal.js": _File(scripts["modal.js"], _TYPES[".js"], cors=True),
        "pay.js": _File(scripts["pay.js"], _TYPES[".js"], cors=True),
        "checkout": _File((STATIC / "checkout.html").read_bytes(), _TYPES[".html"]),
        "config.json": _File(orjson.dumps(_chains(settings)), "application/json"),
    }
    assets = {
        name: _File((STATIC / name).read_bytes(), _TYPES[Path(name).suffix]) for name in ASSETS
    }

    @router.get("/{name}")
    async def top(request: Request, name: str) -> Response:
        found = files.get(name)
        if found is None:
            return Response(b"not found", status_code=404, media_type="text/plain")
        return found.answer(request)

    @router.get("/assets/{name}")
    async def asset(request: Request, name: str) -> Response:
        found = assets.get(name)
        if found is None:
            return Response(b"not found", status_code=404, media_type="text/plain")
        return found.answer(request)

    return router


class PayHeaders:
    """ASGI middleware: the security headers of every answer under ``/pay``."""

    def __init__(self, app: ASGIApp, frame_ancestors: list[str]) -> None:
        self.app = app
        self._headers = {
            "Content-Security-Policy": content_security_policy(frame_ancestors),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cross-Origin-Resource-Policy": "cross-origin",
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path != PAY_PREFIX and not path.startswith(PAY_PREFIX + "/"):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self._headers.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, with_headers)
