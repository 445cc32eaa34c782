"""One process: the roles it runs, on one pool and one Kafka producer.

:func:`run_process` checks the configuration of every role first (chains known,
executor keys loaded and matching the chain's ``relayer``), then opens one
PostgreSQL pool sized for the roles (:func:`pool_size`) and, if a role publishes,
one Kafka producer; it hands them to the roles, runs them with
:func:`~intentd.runtime.run_roles` (``process.drain_seconds``, then cancellation) and closes
the producer, then the pool, once every role has returned (a producer that does not
close within ``CLOSE_SECONDS`` is abandoned; a pool whose connections are not all
back by then is closed at once).

A stop that comes while the pool or the producer is being opened (or before) cancels
that step and returns at once: no role has started, nothing is to be finished.
"""

from __future__ import annotations

import asyncio
import socket
from contextlib import AsyncExitStack
from dataclasses import dataclass

import structlog

from intentd.adapters.consumer_stop import CLOSE_SECONDS
from intentd.adapters.kafka import KafkaPublisher
from intentd.adapters.postgres import Pool, create_pool
from intentd.adapters.signer import Keyring
from intentd.composition.roles import (
    EXECUTOR_CONNECTIONS,
    POLLER_CONNECTIONS,
    executor_role,
    lifecycle_role,
    poller_role,
)
from intentd.runtime import Role, run_roles
from intentd.settings import DatabaseConfig, Settings
from intentd.stopping import Stopping, StopRequest
from intentd.wait import Stopped, until_stopped
from intentd.webhooks.secret_box import secret_box

__all__ = ["PoolSize", "Roles", "close_pool", "close_publisher", "pool_size", "run_process"]

log = structlog.get_logger()


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
    async with AsyncExitStack() as resources:
        try:
            pool = await until_stopped(open_pool(roles, settings.database), stopping.stop)
            resources.push_async_callback(close_pool, pool)
            publisher = None
            if roles.publishes:
                publisher = KafkaPublisher(settings.kafka, client_suffix=roles.kafka_client_suffix)
                resources.push_async_callback(close_publisher, publisher)
                await until_stopped(publisher.start(), stopping.stop)
        except Stopped:
            return
        built: list[Role] = [
            poller_role(settings, chain, pool=pool, publisher=publisher) for chain in roles.pollers
        ]
        built += [
            executor_role(settings, chain, pool=pool, keyring=keyring) for chain in roles.executors
        ]
        if roles.lifecycle:
            assert publisher is not None
            built.append(lifecycle_role(settings, pool=pool, publisher=publisher))
        if roles.api:
            from intentd.api.server import api_role  # FastAPI only where the API runs
            from intentd.console.mount import console_extensions

            extensions = console_extensions(settings)  # the console, if enabled
            built.append(api_role(settings, pool=pool, sock=api_socket, extensions=extensions))
        if roles.webhooks:
            from intentd.composition.webhooks import webhooks_role

            built.append(webhooks_role(settings, pool=pool))
        await run_roles(
            built,
            metrics_port=metrics_port,
            drain_seconds=settings.process.drain_seconds,
            stopping=stopping,
        )
