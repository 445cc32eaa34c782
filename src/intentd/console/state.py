"""What the console keeps per app: built once at mount from the settings."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

from fastapi import Request

from intentd.access.throttle import ThrottlePolicy
from intentd.console.web import Cookies, cookies_of
from intentd.settings import ConfigError, Settings
from intentd.webhooks.secret_box import SecretBox, SecretBoxError, parse_key

__all__ = ["ConsoleState"]

HASHES_AT_ONCE = 2
"""argon2id hashes running at once per process (each takes 64 MiB and a core for
0.1-0.2 s); more sign-ins wait their turn instead of exhausting memory."""
OVERVIEW_SHARE = 4
"""The overview's reads hold at most 1/OVERVIEW_SHARE of the API's pool at once."""


@dataclass(slots=True)
class ConsoleState:
    cookies: Cookies
    throttle: ThrottlePolicy
    idle: timedelta
    absolute: timedelta
    link_lifetime: timedelta
    totp_box: SecretBox | None
    """Seals TOTP secrets (``INTENTD_CONSOLE_KEY``); None: the second factor is off."""
    hashing: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(HASHES_AT_ONCE))
    overview_reads: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))
    """Connections the overview's reads may hold at once, every request of the process
    together (``console.pool_share``): a quarter of ``database.max_pool``, at least one."""

    @staticmethod
    def of_settings(settings: Settings) -> ConsoleState:
        console = settings.console
        box = None
        if settings.console_key is not None:
            try:
                box = SecretBox(parse_key(settings.console_key.get_secret_value()))
            except SecretBoxError:
                raise ConfigError(
                    "console_key (INTENTD_CONSOLE_KEY) = <secret>: not 32 bytes in base64 or hex"
                ) from None
        return ConsoleState(
            cookies=cookies_of(settings),
            throttle=ThrottlePolicy(
                source_limit=console.signin_failures_per_source,
                account_limit=console.signin_failures_per_account,
            ),
            idle=timedelta(minutes=console.session_idle_minutes),
            absolute=timedelta(hours=console.session_absolute_hours),
            link_lifetime=timedelta(hours=console.signin_link_hours),
            totp_box=box,
            overview_reads=asyncio.Semaphore(max(1, settings.database.max_pool // OVERVIEW_SHARE)),
        )

    @staticmethod
    def of(request: Request) -> ConsoleState:
        state: ConsoleState = request.app.state.console
        return state
