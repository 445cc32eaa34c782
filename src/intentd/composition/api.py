"""The API's services, built once per app, and the app on them.

:func:`api_services` builds everything the routes use, once, for as long as the app
serves: the pool (the process's, or one of the app's own, closed with it), the
:class:`~intentd.api.connections.Database` on it, the price source (the process's, or
the config's feeds refreshed in the background, docs/pricing.md), the trigger
processor, the liquidity view (followed in the background when the gate is on), the
authenticator, the intent writer, the batched intent reads, the lifecycle's commands
on the process's :class:`~intentd.lifecycle.chain_book.ChainBook`, and the reports'
reader. It yields them as one typed :class:`~intentd.api.context.Services`; routes take
what they need from it and build nothing.

Readiness: ``on_readiness`` hears True once the services are up, then False while
PostgreSQL is down and True again once it answers, as the process's
:class:`~intentd.supervision.Health` says (every role of the process shares it). An app
given none (tests) watches PostgreSQL itself, as closely as the API needs
(``api.connections.database_cadence``), while it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import structlog
from fastapi import FastAPI

from intentd.adapters.evm.price_feeds import running_prices
from intentd.adapters.library_logs import QuietLibraryLogs
from intentd.adapters.postgres import Connection, Pool, create_pool, intent_store
from intentd.adapters.postgres.lifecycle_uow import PostgresUnitOfWork
from intentd.adapters.postgres.relayer_float import PostgresFloatSource
from intentd.adapters.postgres.report_queries import PostgresReports
from intentd.adapters.probes import PostgresProbe
from intentd.api.app import create_app
from intentd.api.batched_reads import BatchedReads
from intentd.api.callers.auth import Authenticator
from intentd.api.connections import Database, database_cadence
from intentd.api.context import Services
from intentd.api.intents.writes import AnsweringWriter
from intentd.api.processing import Processor
from intentd.intents.admission import LiquidityGate
from intentd.lifecycle.chain_book import ChainBook
from intentd.merchant.intent_commands import IntentCommands
from intentd.pricing import PriceSource
from intentd.reports.ports import ReportReader
from intentd.settings import Settings
from intentd.supervision import POSTGRESQL, Health

__all__ = ["api_app", "api_services"]

log = structlog.get_logger()


def api_app(
    settings: Settings,
    *,
    pool: Pool | None = None,
    prices: PriceSource | None = None,
    health: Health | None = None,
    book: ChainBook | None = None,
    on_readiness: Callable[[bool], None] | None = None,
    extensions: Sequence[Callable[[FastAPI], None]] = (),
) -> FastAPI:
    """The API's app on the services of :func:`api_services` (what the process serves,
    and what the tests serve); ``extensions``: ``api.app.create_app``'s."""

    def services() -> contextlib.AbstractAsyncContextManager[Services]:
        return api_services(
            settings, pool=pool, prices=prices, health=health, book=book,
            on_readiness=on_readiness,
        )  # fmt: skip

    return create_app(settings, services, extensions=extensions)


@asynccontextmanager
async def api_services(
    settings: Settings,
    *,
    pool: Pool | None = None,
    prices: PriceSource | None = None,
    health: Health | None = None,
    book: ChainBook | None = None,
    on_readiness: Callable[[bool], None] | None = None,
) -> AsyncIterator[Services]:
    """The API's services until the block ends (see the module); ``pool``, ``prices``,
    ``health`` and ``book`` are the process's when given (not closed here), else the
    app's own (``book``: the one of ``settings``, for an app outside a process)."""
    async with AsyncExitStack() as stack:
        db = pool
        if db is None:
            db = await create_pool(
                settings.database.url.get_secret_value(),
                min_size=settings.database.min_pool,
                max_size=settings.database.max_pool,
                session_reset=False,  # the API leaves no session state behind
            )
            stack.push_async_callback(db.close)
        watching = health
        if watching is None:
            watching = await stack.enter_async_context(_watching_alone(settings))
        database = Database.of(settings, db, health=watching)
        if prices is None:  # feeds refreshed in the background (docs/pricing.md)
            quoting: PriceSource = await stack.enter_async_context(running_prices(settings))
        else:
            quoting = prices
        if book is None:  # an app outside a process (tests, bench): a book of its own
            book = ChainBook.of_settings(settings)
        processor = Processor(settings, database, prices=quoting, book=book)
        stack.push_async_callback(processor.close)
        gate = LiquidityGate(settings)
        if gate.enabled:
            source = PostgresFloatSource(database.pool, timeout=settings.api.db_acquire_timeout)
            following = asyncio.create_task(gate.follow(source), name="liquidity view")
            following.add_done_callback(_view_stopped)
            stack.push_async_callback(_cancelled, following)

        def reports(conn: Connection) -> ReportReader:
            return PostgresReports(conn, settings)

        services = Services(
            settings=settings,
            database=database,
            auth=Authenticator(settings, database),
            processor=processor,
            prices=quoting,
            writer=AnsweringWriter(
                database,
                settings.intent_addresses(),
                gate=gate if gate.enabled else None,
                max_waiting=settings.api.max_waiting_creates,
                max_pending=settings.intents.max_open_per_client,
            ),
            intents_by_id=BatchedReads(database.connection, intent_store.get_many_by_id),
            intents_by_address=BatchedReads(database.connection, intent_store.get_many_by_address),
            liquidity=gate,
            intent_commands=IntentCommands(book, PostgresUnitOfWork),
            reports=reports,
        )
        if on_readiness is not None:
            watching.listen(POSTGRESQL, on_readiness)
            stack.callback(watching.unlisten, POSTGRESQL, on_readiness)
            on_readiness(not watching.is_down(POSTGRESQL))
        yield services


@asynccontextmanager
async def _watching_alone(settings: Settings) -> AsyncIterator[Health]:
    """A health of the app's own, probing PostgreSQL as the API needs, while it serves;
    the libraries' lines kept to a few (an app outside a process of roles: tests)."""
    health = Health()
    probe = PostgresProbe(settings.database.url.get_secret_value(), timeout=settings.api.db_timeout)
    health.watch(POSTGRESQL, probe, cadence=database_cadence(settings))
    quiet = QuietLibraryLogs(health)
    quiet.install()
    stop = asyncio.Event()
    running = asyncio.create_task(health.run(stop), name="database watch")
    try:
        yield health
    finally:
        stop.set()
        await running
        quiet.remove()
        await probe.close()


def _view_stopped(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error(
            "the view of the relayer's float stopped; creates and quotes will be refused"
            " (liquidity_unknown) until the API restarts",
            error=repr(task.exception()),
        )


async def _cancelled(task: asyncio.Task[None]) -> None:
    """Stop the task; a failure of its own was logged when it ended."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
