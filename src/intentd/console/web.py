"""What the console's routes share: its cookies, the caller's address, the mode.

Cookies are ``HttpOnly`` and ``SameSite=Strict``; with ``console.secure_cookies`` (the
default) they are ``Secure`` and carry the ``__Host-`` prefix, so a browser keeps them
for this exact origin over HTTPS only (no subdomain can set or read them). The
session cookie's value is an opaque random id; the server keeps only its hash.

A mode (``test`` or ``live``) is what a screen shows: the intents, events, webhooks
and keys of the chains of that network class only (test: test networks; live: main
networks), so test and live data never share a screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Query, Request
from starlette.responses import Response

from intentd.api.context import Services
from intentd.contract.mode import Mode, mode_of
from intentd.settings import Settings

__all__ = [
    "CONSOLE_API",
    "CONSOLE_PREFIX",
    "Cookies",
    "ModeParam",
    "cookies_of",
    "mode_chains",
    "source",
]

CONSOLE_PREFIX = "/console"
CONSOLE_API = "/console/api"
ModeParam = Annotated[Mode, Query(description="test or live: what the screen shows")]
DEVICE_DAYS = 90
CHALLENGE_SECONDS = 300


@dataclass(frozen=True, slots=True)
class Cookies:
    session: str
    challenge: str
    device: str
    secure: bool

    def set(self, response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path="/",
            secure=self.secure,
            httponly=True,
            samesite="strict",
        )

    def clear(self, response: Response, name: str) -> None:
        response.delete_cookie(name, path="/", secure=self.secure, httponly=True, samesite="strict")


def cookies_of(settings: Settings) -> Cookies:
    secure = settings.console.secure_cookies
    prefix = "__Host-" if secure else ""
    return Cookies(
        session=f"{prefix}intentd_console",
        challenge=f"{prefix}intentd_challenge",
        device=f"{prefix}intentd_device",
        secure=secure,
    )


def source(request: Request) -> str | None:
    """The request's source address (``api.trusted_proxies`` as the API reads it)."""
    return Services.of(request).auth.source_of(request.scope)


def mode_chains(settings: Settings, mode: str) -> list[str]:
    """The chains whose intents a screen of ``mode`` shows, by name."""
    return sorted(name for name, c in settings.chains.items() if mode_of(c.network) == mode)
