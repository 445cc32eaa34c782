"""Adding the console to the API's app (``api.app.create_app``'s ``extensions``).

:func:`console_extensions` is what the composition root passes: nothing when
``console.enabled`` is false. :func:`install` adds the console's routes (its JSON API
first, then its pages), its headers, its per-app state, and a task beside the app
that prunes what has outlived its retention (the audit log past
``console.audit_retention_days``, ended sessions and links, old throttle counters,
expired approvals, the overview's day totals past 60 days), once an hour; a failed
round is logged and tried again the next.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import structlog
from fastapi import FastAPI

from intentd.adapters.postgres import (
    audit_log,
    console_overview,
    console_sessions,
    refund_approvals,
)
from intentd.api.context import Services
from intentd.console import (
    routes_approvals,
    routes_audit,
    routes_developers,
    routes_overview,
    routes_payments,
    routes_reports,
    routes_signin,
    routes_team,
    routes_webhooks,
)
from intentd.console.pages import ConsoleHeaders, pages_router
from intentd.console.state import ConsoleState
from intentd.settings import Settings

__all__ = ["PRUNE_EVERY", "console_extensions", "install", "prune_once"]

log = structlog.get_logger()
PRUNE_EVERY = 3600.0


def console_extensions(settings: Settings) -> tuple[Callable[[FastAPI], None], ...]:
    """The console's extension of the API's app; none when ``console.enabled`` is false.
    A bad ``INTENTD_CONSOLE_KEY`` raises ``ConfigError`` here, before anything is served."""
    if not settings.console.enabled:
        return ()
    state = ConsoleState.of_settings(settings)
    return (lambda app: install(app, state),)


def install(app: FastAPI, state: ConsoleState) -> None:
    for module in (
        routes_signin,
        routes_overview,
        routes_payments,
        routes_approvals,
        routes_webhooks,
        routes_developers,
        routes_team,
        routes_audit,
        routes_reports,
    ):
        app.include_router(module.router)
    app.include_router(pages_router())
    app.add_middleware(ConsoleHeaders)
    app.state.console = state
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with inner(app):
            services: Services = app.state.services
            pruning = asyncio.create_task(_prune_forever(services))
            try:
                yield
            finally:
                pruning.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pruning

    app.router.lifespan_context = lifespan


async def prune_once(services: Services) -> int:
    """One round of pruning; how many rows went."""
    days = services.settings.console.audit_retention_days
    total = 0
    async with services.connection() as conn:
        while True:
            pruned = await audit_log.prune(conn, older_than_days=days)
            total += pruned
            if pruned < 1_000:
                break
        total += await console_sessions.prune(conn)
        total += await console_overview.prune_day_totals(conn)
        total += await refund_approvals.expire_stale(conn, datetime.now(UTC))
    return total


async def _prune_forever(services: Services) -> None:
    while True:
        try:
            pruned = await prune_once(services)
            if pruned:
                log.info("console records pruned", rows=pruned)
        except Exception as exc:  # a round that fails is tried again at the next
            log.warning("console pruning failed; tried again later", error=repr(exc))
        await asyncio.sleep(PRUNE_EVERY)
