"""Each role wired from its loop and the ports it is given.

A role builder checks what it can at once (the chain is configured, the executor's
keys are there) so a bad configuration fails before anything connects. The pool and
the Kafka producer are the process's (:mod:`~intentd.composition.process`) and are
not closed by the role; a role given none opens its own and closes it (tests).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import TypeVar

import structlog

from intentd import observability as metrics
from intentd.adapters.chain import open_chain
from intentd.adapters.chain_state import EvmChainState
from intentd.adapters.chain_writer import EvmChainWriter
from intentd.adapters.consumer_stop import close_consumer, start_until_stopped
from intentd.adapters.cursor_store import WINDOW, ChainLock, PostgresPollerStore
from intentd.adapters.execution_store import PostgresExecutionStore
from intentd.adapters.executor_lease import ExecutorLease
from intentd.adapters.json_rpc import JsonRpcClient
from intentd.adapters.kafka import KafkaPublisher, make_consumer
from intentd.adapters.l1_fee import l1_fees_for
from intentd.adapters.lease import Lease
from intentd.adapters.lifecycle_kafka import KafkaDeadLetters, KafkaInbox, KafkaLogProgress
from intentd.adapters.lifecycle_uow import PostgresStore
from intentd.adapters.log_positions import PostgresLogPositions
from intentd.adapters.native_intents import PostgresOpenNativeIntents
from intentd.adapters.outbox import OutboxRelay
from intentd.adapters.postgres import Pool, create_pool
from intentd.adapters.second_provider import RpcSecondProvider
from intentd.adapters.signer import Keyring
from intentd.adapters.verifier_chains import EvmVerifierChains
from intentd.execution.deposit_verifier import DepositVerifier
from intentd.execution.executor import Executor
from intentd.indexer.poller import Poller
from intentd.indexer.ports import ChainReader, Publisher
from intentd.indexer.reconciliation import Reconciliation
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.lifecycle.consumer import LifecycleConsumer
from intentd.lifecycle.expiry import Expiry
from intentd.lifecycle.gap_recovery import LogGapRecovery
from intentd.lifecycle.holds import HoldWatch
from intentd.lifecycle.outages import outlast_outages
from intentd.lifecycle.trigger_verifier import TriggerVerifier
from intentd.messages import deposits_topic
from intentd.runtime import READINESS, Role
from intentd.settings import Settings

__all__ = ["executor_role", "lifecycle_role", "poller_role"]

log = structlog.get_logger()

POLLER_CONNECTIONS = 4
"""Pool connections a poller uses at most (one holds its chain lock)."""
EXECUTOR_CONNECTIONS = 4
"""Pool connections an executor uses at most (one holds its lease and listens)."""


_L = TypeVar("_L", bound=Lease)


async def _leased(
    lease_of: Callable[[Pool], _L],
    stop: asyncio.Event,
    resources: AsyncExitStack,
    *,
    settings: Settings,
    pool: Pool | None,
    connections: int,
) -> tuple[Pool, _L] | None:
    """The pool (``pool``, or one of the role's own of ``connections``) and the chain's
    lease, released with ``resources``; None if ``stop`` came first."""
    db = pool
    if db is None:
        db = await create_pool(settings.database.url.get_secret_value(), max_size=connections)
        resources.push_async_callback(db.close)
    lease = lease_of(db)
    if not await lease.acquire(stop):
        return None
    resources.push_async_callback(lease.release)
    return db, lease


def poller_role(
    settings: Settings,
    chain: str,
    *,
    pool: Pool | None = None,
    publisher: Publisher | None = None,
    reader: ChainReader | None = None,
    reconciliation: Reconciliation | None = None,
) -> Role:
    """The ``poll --chain NAME`` role: follow ``chain`` until stop, then close what it opened.

    Without a ``reader``, the balance reconciliation reads through the role's own RPC
    client; with one, only if ``reconciliation`` is given.
    """
    config = settings.chain(chain)

    async def role(stop: asyncio.Event) -> None:
        ready_name = f"poll:{chain}"
        READINESS.expect(ready_name)
        with structlog.contextvars.bound_contextvars(chain=chain):
            async with AsyncExitStack() as resources:
                leased = await _leased(
                    lambda db: ChainLock(db, chain), stop, resources,
                    settings=settings, pool=pool, connections=POLLER_CONNECTIONS,
                )  # fmt: skip
                if leased is None:
                    return
                db, _ = leased
                out = publisher
                if out is None:
                    kafka = KafkaPublisher(settings.kafka, client_suffix=f"-poll-{chain}")
                    await kafka.start()
                    resources.push_async_callback(kafka.stop)
                    out = kafka
                intents = PostgresOpenNativeIntents(db, chain)  # the watched set reads through it
                watch_retention = timedelta(days=settings.indexer.watch_retention_days)
                chain_reader, reconcile = reader, reconciliation
                if chain_reader is None:
                    client, evm = open_chain(config)
                    resources.push_async_callback(evm.close)
                    chain_reader = evm
                    if reconcile is None:
                        reconcile = Reconciliation(
                            chain,
                            EvmChainState(client),
                            intents,
                            by_transaction=config.reconciled_identity == "transaction",
                        )
                poller = Poller(
                    config,
                    reader=chain_reader,
                    store=PostgresPollerStore(db, chain),
                    publisher=out,
                    watched=WatchedIntents(intents, retention=watch_retention),
                    topic=deposits_topic(settings.kafka.topic_prefix, chain),
                    reconciliation=reconcile,
                )
                await poller.start()
                READINESS.ready(ready_name)
                await poller.run(stop)
                log.info("poller stopped", cursor=poller.cursor.number)

    return role


def executor_role(
    settings: Settings, chain: str, *, pool: Pool | None = None, keyring: Keyring | None = None
) -> Role:
    """The ``execute --chain NAME`` role. Keys are loaded (and the relayer key checked
    against the chain's ``relayer``) now, so a bad secret fails at start."""
    config = settings.chain(chain)
    keys = keyring if keyring is not None else Keyring.from_settings(settings)
    keys.check_relayer(config)

    async def role(stop: asyncio.Event) -> None:
        ready_name = f"execute:{chain}"
        READINESS.expect(ready_name)
        with structlog.contextvars.bound_contextvars(chain=chain):
            async with AsyncExitStack() as resources:
                leased = await _leased(
                    lambda db: ExecutorLease(db, chain), stop, resources,
                    settings=settings, pool=pool, connections=EXECUTOR_CONNECTIONS,
                )  # fmt: skip
                if leased is None:
                    return
                db, lease = leased
                metrics.EXECUTOR_ACTIVE.labels(chain).set(1)
                resources.callback(metrics.EXECUTOR_ACTIVE.labels(chain).set, 0)
                urls, timeout, chain_id = config.rpc_urls, config.rpc_timeout, config.chain_id
                once = JsonRpcClient(chain, urls, timeout=timeout, attempts=1, chain_id=chain_id)
                writer = EvmChainWriter(
                    JsonRpcClient(chain, urls, timeout=timeout, chain_id=chain_id), once
                )
                resources.push_async_callback(writer.close)
                # None: no token sets a threshold
                verifier = DepositVerifier.from_settings(settings, RpcSecondProvider)
                if verifier is not None:
                    resources.push_async_callback(verifier.close)
                executor = Executor(
                    config,
                    settings.execution,
                    store=PostgresExecutionStore(db, chain, settings.kafka.topic_prefix),
                    writer=writer,
                    keyring=keys,
                    verifier=verifier,
                    l1_fees=l1_fees_for(config, once),
                    liquidity=settings.liquidity,
                )
                await executor.prime()  # the float stored before the chain counts as ready
                READINESS.ready(ready_name)
                started = time.monotonic()
                await executor.run(stop, lease)
                log.info("executor stopped", seconds=round(time.monotonic() - started, 1))

    return role


def lifecycle_role(settings: Settings, *, pool: Pool, publisher: KafkaPublisher) -> Role:
    """The lifecycle consumer, the outbox relay, the expiry and the verifier of
    trigger-credited deposits, on the process's pool and producer."""

    async def role(stop: asyncio.Event) -> None:
        READINESS.expect("lifecycle")
        store = PostgresStore(pool)
        positions = PostgresLogPositions(pool)
        lifecycle = LifecycleConsumer(
            settings, store, KafkaDeadLetters(publisher), positions=positions
        )
        verifier = TriggerVerifier(settings, store, EvmVerifierChains(), final_depth=WINDOW)
        gap_chains = EvmVerifierChains()
        dead_letters = KafkaDeadLetters(publisher)
        gaps = LogGapRecovery(
            settings, store, positions, gap_chains, dead_letters, reorg_window=WINDOW
        )
        consumer = make_consumer(
            settings.kafka, lifecycle.topics, group_id=settings.kafka.lifecycle_group
        )
        async with AsyncExitStack() as closing:  # each step runs, even if one is cancelled
            closing.callback(log.info, "lifecycle stopped")
            closing.push_async_callback(verifier.close)
            closing.push_async_callback(gap_chains.close)
            closing.push_async_callback(close_consumer, consumer)
            if not await start_until_stopped(consumer, stop):
                return
            READINESS.ready("lifecycle")
            log.info("lifecycle started", topics=lifecycle.topics)
            async with asyncio.TaskGroup() as group:
                relay = OutboxRelay(pool, publisher)
                group.create_task(
                    outlast_outages("outbox relay", relay.run, stop, classify=store.classify)
                )
                group.create_task(
                    lifecycle.run(KafkaInbox(consumer, stop, recover=gaps.recover), stop)
                )
                deposit_logs = [
                    deposits_topic(settings.kafka.topic_prefix, c) for c in settings.chains
                ]
                progress = KafkaLogProgress(consumer, deposit_logs)
                group.create_task(Expiry(settings, store, progress=progress).run(stop))
                group.create_task(verifier.run(stop))
                group.create_task(HoldWatch(store).run(stop))

    return role
