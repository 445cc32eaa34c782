"""One process: the roles it runs, on one pool and one Kafka producer.

:func:`run_process` checks the configuration of every role first (chains known,
executor keys loaded and matching the chain's ``relayer``), then serves its health
endpoint, then opens one PostgreSQL pool sized for the roles (:func:`pool_size`) and,
if a role publishes, one Kafka producer; it hands them to the roles, runs them with
:func:`~intentd.runtime.run_roles` (``process.drain_seconds``, then cancellation) and closes
the producer, then the pool, once every role has returned (a producer that does not
close within ``CLOSE_SECONDS`` is abandoned; a pool whose connections are not all
back by then is closed at once).

Dependencies (docs/operations.md, Outages): the process's one
:class:`~intentd.supervision.Health`, shared by every role it runs (the API's
included), probes PostgreSQL (every second where the API runs,
``api.connections.database_cadence``), Kafka (if a role uses it) and the RPC of each
chain a poller or an executor of the process serves (``adapters.probes``), one probe
each; ``/readyz`` is 503 while one is down or a role makes no progress, and each outage
is logged once for the process. Opening the pool and starting the producer wait out an
outage as the roles do (``until_done``), so a process started while PostgreSQL or the
brokers are away waits for them, not ready, and starts once they answer. aiokafka's
and asyncpg's own log lines are kept to a few (``adapters.library_logs``).

A stop that comes while the pool or the producer is being opened (or before) cancels
that step and returns at once: no role has started, nothing is to be finished.
"""

from __future__ import annotations

import asyncio
import socket
from contextlib import AsyncExitStack
from dataclasses import dataclass

import structlog

from intentd.adapters.diagnosis import diagnose_for
from intentd.adapters.evm.signer import Keyring
from intentd.adapters.kafka import KafkaPublisher
from intentd.adapters.kafka.consumer_stop import CLOSE_SECONDS
from intentd.adapters.library_logs import QuietLibraryLogs
from intentd.adapters.postgres import Pool, create_pool
from intentd.adapters.probes import KafkaProbe, PostgresProbe, RpcProbe
from intentd.composition.roles import (
    EXECUTOR_CONNECTIONS,
    POLLER_CONNECTIONS,
    executor_role,
    lifecycle_role,
    poller_role,
)
from intentd.lifecycle.chain_book import ChainBook
from intentd.runtime import READINESS, Role, exit_within, run_roles, serve_health
from intentd.settings import DatabaseConfig, Settings
from intentd.stopping import Stopping, StopRequest
from intentd.supervision import KAFKA, POSTGRESQL, Health, rpc, until_done
from intentd.wait import Stopped
from intentd.webhooks.secret_box import secret_box

__all__ = ["PoolSize", "Roles", "close_pool", "close_publisher", "pool_size", "run_process"]

log = structlog.get_logger()

OPENING = "pool and producer"
"""The readiness name of the process's own start (its pool, its producer)."""


@dataclass(frozen=True, slots=True)
class Roles:
    """What one process runs."""

    pollers: tuple[str, ...] = ()
    executors: tuple[str, ...] = ()
    lifecycle: bool = False
    api: bool = False
    webhooks: bool = False

    @classmethod
    def everything(cls, settings: Settings) -> Roles:
        """``intentd run``: every role of every chain; webhooks where their key is set
        (it seals the endpoints' secrets)."""
        chains = tuple(settings.chains)
        webhooks = settings.webhook_key is not None
        return cls(pollers=chains, executors=chains, lifecycle=True, api=True, webhooks=webhooks)

    @property
    def publishes(self) -> bool:
        return bool(self.pollers) or self.lifecycle

    @property
    def uses_kafka(self) -> bool:
        return self.publishes or self.webhooks

    @property
    def kafka_client_suffix(self) -> str:
        """The producer's client id suffix: the role's, when the process runs one."""
        if self.pollers and not (self.lifecycle or self.executors or self.api):
            return f"-poll-{self.pollers[0]}" if len(self.pollers) == 1 else "-poll"
        return "-lifecycle" if self == Roles(lifecycle=True) else "-run"


@dataclass(frozen=True, slots=True)
class PoolSize:
    min_size: int
    max_size: int
    session_reset: bool
    """False only for the API alone, which leaves no session state behind."""


def pool_size(roles: Roles, database: DatabaseConfig) -> PoolSize:
    """The sum of what each role may hold at once: a poller or an executor
    :data:`~intentd.composition.roles.POLLER_CONNECTIONS` (one held by its lock),
    the lifecycle, the API and the webhooks ``database.max_pool`` each."""
    most = POLLER_CONNECTIONS * len(roles.pollers) + EXECUTOR_CONNECTIONS * len(roles.executors)
    most += database.max_pool * (int(roles.lifecycle) + int(roles.api) + int(roles.webhooks))
    if most == 0:
        raise ValueError("a process runs at least one role")
    least = database.min_pool if roles.lifecycle or roles.api or roles.webhooks else 1
    return PoolSize(
        min_size=min(least, most),
        max_size=most,
        session_reset=roles != Roles(api=True),
    )


async def close_pool(pool: Pool, within: float = CLOSE_SECONDS) -> None:
    """Close ``pool`` once its connections are back; past ``within`` seconds (a task
    cancelled by a second signal may still hold one), close them all at once: their
    open transactions roll back."""
    try:
        await asyncio.wait_for(pool.close(), within)
    except TimeoutError:
        log.warning("database connections still in use; closing them", seconds=within)
        pool.terminate()


async def close_publisher(publisher: KafkaPublisher, within: float = CLOSE_SECONDS) -> None:
    """Stop the producer (safe if it never started); abandoned after ``within`` seconds
    (a broker gone): the roles waited for the acknowledgement of all they published."""
    try:
        await asyncio.wait_for(publisher.stop(), within)
    except TimeoutError:
        log.warning("kafka producer did not close in time", seconds=within)


async def open_pool(roles: Roles, database: DatabaseConfig) -> Pool:
    size = pool_size(roles, database)
    return await create_pool(
        database.url.get_secret_value(),
        min_size=size.min_size,
        max_size=size.max_size,
        session_reset=size.session_reset,
    )


async def run_process(
    settings: Settings,
    roles: Roles,
    *,
    metrics_port: int | None,
    api_socket: socket.socket | None = None,
    stopping: Stopping | None = None,
) -> None:
    """Run ``roles`` until ``stopping.stop`` (without ``stopping``: SIGTERM/SIGINT) or
    until one fails (see the module)."""
    for chain in (*roles.pollers, *roles.executors):
        settings.chain(chain)  # ConfigError for an unknown chain, before connecting
    keyring = Keyring.from_settings(settings) if roles.executors else None
    if roles.webhooks:
        secret_box(settings)  # ConfigError without a usable webhook_key, before connecting
    if keyring is not None:
        for chain in roles.executors:
            keyring.check_relayer(settings.chain(chain))
    if stopping is None:
        with StopRequest().watching() as own:
            await _open_and_run(
                settings, roles, keyring, metrics_port=metrics_port, api_socket=api_socket,
                stopping=own,
            )  # fmt: skip
    else:
        await _open_and_run(
            settings, roles, keyring, metrics_port=metrics_port, api_socket=api_socket,
            stopping=stopping,
        )  # fmt: skip


async def _open_and_run(
    settings: Settings,
    roles: Roles,
    keyring: Keyring | None,
    *,
    metrics_port: int | None,
    api_socket: socket.socket | None,
    stopping: Stopping,
) -> None:
    health = Health(readiness=READINESS, on_failure=exit_within)
    probes = _watch(health, settings, roles)
    quiet = QuietLibraryLogs(health)
    quiet.install()
    READINESS.expect(OPENING)
    ended = asyncio.Event()  # the health endpoint and the probes serve until the very end
    try:
        async with asyncio.TaskGroup() as group:
            if metrics_port is not None:
                group.create_task(serve_health(metrics_port, ended))
            group.create_task(health.run(ended))
            try:
                await _open_then_run(
                    settings, roles, keyring, health=health, api_socket=api_socket,
                    stopping=stopping,
                )  # fmt: skip
            finally:
                ended.set()
    finally:
        quiet.remove()
        for probe in probes:
            await probe.close()


def _watch(
    health: Health, settings: Settings, roles: Roles
) -> list[PostgresProbe | KafkaProbe | RpcProbe]:
    """Probe what the process's roles use, each dependency once, as closely as the
    closest need of a role (the API's PostgreSQL: every second)."""
    cadence = health.cadence(POSTGRESQL)  # the daemons'
    if roles.api:
        from intentd.api.connections import database_cadence  # FastAPI only where the API runs

        needed = database_cadence(settings)
        cadence = needed if roles == Roles(api=True) else cadence.closest(needed)
    url = settings.database.url.get_secret_value()
    database = PostgresProbe(url, timeout=cadence.timeout)
    health.watch(POSTGRESQL, database, cadence=cadence)
    probes: list[PostgresProbe | KafkaProbe | RpcProbe] = [database]
    if roles.uses_kafka:
        brokers = KafkaProbe(settings.kafka)
        health.watch(KAFKA, brokers)
        probes.append(brokers)
    for chain in dict.fromkeys((*roles.pollers, *roles.executors)):
        node = RpcProbe(settings.chain(chain))
        health.watch(rpc(chain), node)
        probes.append(node)
    return probes


async def _open_then_run(
    settings: Settings,
    roles: Roles,
    keyring: Keyring | None,
    *,
    health: Health,
    api_socket: socket.socket | None,
    stopping: Stopping,
) -> None:
    diagnose = diagnose_for(None)
    async with AsyncExitStack() as resources:
        try:
            pool = await until_done(
                "open the database pool", lambda: open_pool(roles, settings.database),
                stopping.stop, health=health, diagnose=diagnose,
            )  # fmt: skip
            resources.push_async_callback(close_pool, pool)
            publisher = None
            if roles.publishes:
                publisher = KafkaPublisher(settings.kafka, client_suffix=roles.kafka_client_suffix)
                resources.push_async_callback(close_publisher, publisher)
                await until_done(
                    "start the kafka producer", publisher.start, stopping.stop,
                    health=health, diagnose=diagnose,
                )  # fmt: skip
        except Stopped:
            return
        READINESS.ready(OPENING)
        book = ChainBook.of_settings(settings)  # the one of the process, for every role
        built: list[Role] = [
            poller_role(settings, chain, pool=pool, publisher=publisher, health=health)
            for chain in roles.pollers
        ]
        built += [
            executor_role(settings, chain, pool=pool, keyring=keyring, health=health)
            for chain in roles.executors
        ]
        if roles.lifecycle:
            assert publisher is not None
            built.append(
                lifecycle_role(settings, pool=pool, publisher=publisher, health=health, book=book)
            )
        if roles.api:
            from intentd.api.server import api_role, tell_readiness  # FastAPI only where it runs
            from intentd.composition.api import api_app
            from intentd.console.mount import console_extensions

            app = api_app(
                settings, pool=pool, health=health, book=book, on_readiness=tell_readiness,
                extensions=console_extensions(settings),  # the console, if enabled
            )  # fmt: skip
            built.append(api_role(settings, app, sock=api_socket))
        if roles.webhooks:
            from intentd.composition.webhooks import webhooks_role

            built.append(webhooks_role(settings, pool=pool, health=health))
        await run_roles(
            built,
            drain_seconds=settings.process.drain_seconds,
            stopping=stopping,
            on_failure=exit_within,
        )
