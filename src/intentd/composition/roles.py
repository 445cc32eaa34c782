"""Each role wired from its loop and the ports it is given.

A role builder checks what it can at once (the chain is configured, the executor's
keys are there) so a bad configuration fails before anything connects. The pool and
the Kafka producer are the process's (:mod:`~intentd.composition.process`) and are
not closed by the role; a role given none opens its own and closes it (tests).

Every role runs its work under :func:`~intentd.supervision.supervise` with the
process's :class:`~intentd.supervision.Health` (a role given none has one of its own):
an outage of PostgreSQL, Kafka or the chain's RPC makes the work wait for the
dependency and start over, as a new process would (the lease taken again, the cursor
or the group's offsets read again), never ending the process. A poller or an executor
starts over as one piece; the lifecycle's six tasks each on their own, its consumer
with a new Kafka consumer (so it resumes from the committed offsets, never past a
message it did not apply).
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
from intentd.adapters.diagnosis import diagnose_for
from intentd.adapters.evm.chain_reader import open_chain
from intentd.adapters.evm.chain_writer import EvmChainWriter
from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.adapters.evm.l1_fee import l1_fees_for
from intentd.adapters.evm.price_feeds import running_prices
from intentd.adapters.evm.second_provider import RpcSecondProvider
from intentd.adapters.evm.signer import Keyring
from intentd.adapters.evm.state_reader import open_chain_state
from intentd.adapters.evm.verifier_chains import EvmVerifierChains
from intentd.adapters.kafka import KafkaPublisher, make_consumer
from intentd.adapters.kafka.consumer_stop import close_consumer, start_until_stopped
from intentd.adapters.kafka.lifecycle_inbox import (
    CurrentConsumer,
    KafkaDeadLetters,
    KafkaInbox,
    KafkaLogProgress,
)
from intentd.adapters.postgres import Pool, create_pool
from intentd.adapters.postgres.cursor_store import WINDOW, ChainLock, PostgresPollerStore
from intentd.adapters.postgres.execution_store import PostgresExecutionStore
from intentd.adapters.postgres.executor_lease import ExecutorLease
from intentd.adapters.postgres.lease import Lease
from intentd.adapters.postgres.lifecycle_uow import PostgresStore
from intentd.adapters.postgres.log_positions import PostgresLogPositions
from intentd.adapters.postgres.native_intents import PostgresOpenNativeIntents
from intentd.adapters.postgres.outbox import OutboxRelay
from intentd.chain.evm.ports import ChainReader
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.execution.deposit_verifier import DepositVerifier
from intentd.execution.executor import Executor
from intentd.indexer.poller import Poller
from intentd.indexer.ports import DepositPublisher
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.lifecycle.awaiting import AwaitingPrices
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.consumer import LifecycleConsumer
from intentd.lifecycle.expiry import Expiry
from intentd.lifecycle.holds import HoldWatch
from intentd.lifecycle.valuation import Valuer
from intentd.messages import deposits_topic
from intentd.runtime import READINESS, Role
from intentd.scanning.gap_recovery import LogGapRecovery
from intentd.scanning.trigger_verifier import TriggerVerifier
from intentd.settings import Settings
from intentd.supervision import Health, supervise

__all__ = ["executor_role", "lifecycle_role", "poller_role"]

log = structlog.get_logger()

POLLER_CONNECTIONS = 4
"""Pool connections a poller uses at most (one holds its chain lock)."""
EXECUTOR_CONNECTIONS = 4
"""Pool connections an executor uses at most (one holds its lease and listens)."""
STALL_SECONDS = 120.0
"""Seconds a role's main loop may go without finishing a round before the process is
reported not ready (``intentd_task_stalled``): a poll batch, an executor tick, a fetch
of the lifecycle's or the webhooks' consumer (a long gap rescan may exceed it)."""


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
    publisher: DepositPublisher | None = None,
    reader: ChainReader | None = None,
    reconciliation: Reconciliation | None = None,
    health: Health | None = None,
) -> Role:
    """The ``poll --chain NAME`` role: follow ``chain`` until stop, then close what it opened.

    Without a ``reader``, the balance reconciliation reads through the role's own RPC
    client; with one, only if ``reconciliation`` is given.
    """
    config = settings.chain(chain)
    ready_name = f"poll:{chain}"

    async def follow(stop: asyncio.Event) -> None:
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
                resources.push_async_callback(kafka.stop)
                await kafka.start()
                out = kafka
            intents = PostgresOpenNativeIntents(db, chain)  # the watched set reads through it
            watch_retention = timedelta(days=settings.indexer.watch_retention_days)
            chain_reader, reconcile = reader, reconciliation
            if chain_reader is None:
                _, evm = open_chain(config)
                resources.push_async_callback(evm.close)
                chain_reader = evm
                if reconcile is None:
                    balances, state = open_chain_state(config)
                    resources.push_async_callback(balances.close)
                    reconcile = Reconciliation(
                        chain,
                        state,
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

    async def role(stop: asyncio.Event) -> None:
        READINESS.expect(ready_name)
        with structlog.contextvars.bound_contextvars(chain=chain):
            await supervise(
                ready_name, follow, stop, health=health or Health(), diagnose=diagnose_for(chain),
                stall_after=STALL_SECONDS, readiness=ready_name,
            )  # fmt: skip

    return role


def executor_role(
    settings: Settings,
    chain: str,
    *,
    pool: Pool | None = None,
    keyring: Keyring | None = None,
    health: Health | None = None,
) -> Role:
    """The ``execute --chain NAME`` role. Keys are loaded (and the relayer key checked
    against the chain's ``relayer``) now, so a bad secret fails at start."""
    config = settings.chain(chain)
    keys = keyring if keyring is not None else Keyring.from_settings(settings)
    keys.check_relayer(config)
    ready_name = f"execute:{chain}"

    async def execute(stop: asyncio.Event) -> None:
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
                reader=writer,
                fees=writer,
                broadcaster=writer,
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

    async def role(stop: asyncio.Event) -> None:
        READINESS.expect(ready_name)
        with structlog.contextvars.bound_contextvars(chain=chain):
            await supervise(
                ready_name, execute, stop, health=health or Health(), diagnose=diagnose_for(chain),
                stall_after=STALL_SECONDS, readiness=ready_name,
            )  # fmt: skip

    return role


def lifecycle_role(
    settings: Settings,
    *,
    pool: Pool,
    publisher: KafkaPublisher,
    book: ChainBook,
    health: Health | None = None,
) -> Role:
    """The lifecycle consumer, the outbox relay, the expiry, the verifier of
    trigger-credited deposits, the watch of reorg holds and the valuing of intents
    awaiting a price, on the process's pool, producer and chain ``book``, with a price
    refresher of its own (``running_prices``: the prices a revalued intent's payment is
    valued at); each supervised on its own (see the module)."""

    async def role(stop: asyncio.Event) -> None:
        READINESS.expect("lifecycle")
        async with running_prices(settings) as prices:  # docs/pricing.md, Slippage
            rates = Valuer(settings, prices)
            await _lifecycle(settings, pool, publisher, stop, health=health, rates=rates, book=book)

    return role


async def _lifecycle(
    settings: Settings,
    pool: Pool,
    publisher: KafkaPublisher,
    stop: asyncio.Event,
    *,
    health: Health | None,
    rates: Valuer,
    book: ChainBook,
) -> None:
    """The lifecycle's tasks, each supervised, until ``stop``; ``rates``: the prices a
    revalued intent's payment is valued at (a cache the role refreshes in the background)."""
    supervisor = health or Health()
    store = PostgresStore(pool)
    positions = PostgresLogPositions(pool)
    lifecycle = LifecycleConsumer(
        settings, store, KafkaDeadLetters(publisher), book=book, positions=positions, rates=rates
    )
    verifier = TriggerVerifier(settings, store, EvmVerifierChains(), book=book, final_depth=WINDOW)
    gap_chains = EvmVerifierChains()
    gaps = LogGapRecovery(
        settings, store, positions, gap_chains, KafkaDeadLetters(publisher),
        book=book, reorg_window=WINDOW, rates=rates,
    )  # fmt: skip
    current = CurrentConsumer()

    async def consume(stop: asyncio.Event) -> None:
        """Join the group with a new consumer, apply until stop, leave."""
        consumer = make_consumer(
            settings.kafka, lifecycle.topics, group_id=settings.kafka.lifecycle_group
        )
        try:
            if not await start_until_stopped(consumer, stop):
                return
            current.consumer = consumer
            READINESS.ready("lifecycle")
            log.info("lifecycle started", topics=lifecycle.topics)
            await lifecycle.run(KafkaInbox(consumer, stop, recover=gaps.recover), stop)
        finally:
            current.consumer = None
            await close_consumer(consumer)

    deposit_logs = [deposits_topic(settings.kafka.topic_prefix, c) for c in settings.chains]
    expiry = Expiry(settings, store, book=book, progress=KafkaLogProgress(current, deposit_logs))
    tasks = {
        "outbox relay": OutboxRelay(pool, publisher).run,
        "expiry": expiry.run,
        "trigger verifier": verifier.run,
        "reorg hold watch": HoldWatch(store).run,
        "awaiting prices": AwaitingPrices(
            store, book, rates, interval=settings.pricing.refresh_interval
        ).run,
    }
    diagnose = diagnose_for(None)
    async with AsyncExitStack() as closing:  # each step runs, even if one is cancelled
        closing.callback(log.info, "lifecycle stopped")
        closing.push_async_callback(verifier.close)
        closing.push_async_callback(gap_chains.close)
        async with asyncio.TaskGroup() as group:
            group.create_task(
                supervise(
                    "lifecycle consumer",
                    consume,
                    stop,
                    health=supervisor,
                    diagnose=diagnose,
                    stall_after=STALL_SECONDS,
                    readiness="lifecycle",
                )
            )
            for name, run in tasks.items():
                group.create_task(supervise(name, run, stop, health=supervisor, diagnose=diagnose))
