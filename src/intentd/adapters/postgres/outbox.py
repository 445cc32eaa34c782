"""The outbox relay: publishes committed outbox rows to Kafka, in order, at least once.

Rows are read in ``id`` order and published with an awaited idempotent producer;
only then are they marked published. A crash in between publishes them again
(consumers dedupe by event ``id``). One relay publishes at a time: each batch
holds a transaction-level advisory lock, so several lifecycle replicas can run the
relay without reordering events. The relay wakes on ``NOTIFY`` from
:func:`lifecycle_store.enqueue` and also polls, in case a notification is lost.
The relay that holds the lock sets ``intentd_outbox_backlog`` to the rows not yet
published, before and after each batch (up to :data:`BACKLOG_COUNT_CAP`); one that
finds the lock taken sets 0, so the largest value over the replicas is the backlog.

A database or Kafka failure ends :meth:`OutboxRelay.run` with the error (rows not
marked published are published again by the next run); its supervisor starts it again
once the dependency is back (``composition.roles``).

The outbox stays bounded: while it runs, the relay deletes rows published more than
``keep_days`` ago (7; the public history lives in the event log, ``intent_events``),
every ``prune_every`` seconds (an hour; first at start), ``PRUNE_BATCH`` rows at a time
between relay batches, so pruning never holds events back. A row not yet published is
never deleted, however old. A failed pruning is logged and tried at the next round.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

from intentd import observability as metrics
from intentd.adapters.kafka import KafkaPublisher, OutgoingMessage
from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.held_connections import give_back, unlisten
from intentd.adapters.postgres.lifecycle_store import OUTBOX_CHANNEL
from intentd.faults import crash_point
from intentd.supervision import progress
from intentd.wait import wait_any

log = structlog.get_logger()
_RELAY_LOCK = 0x1A7E_0B0C
BACKLOG_COUNT_CAP = 10_000
"""``intentd_outbox_backlog`` counts unpublished rows up to this many (a bounded query)."""
PRUNE_BATCH = 10_000
"""Published rows deleted per statement when pruning (short transactions)."""


class OutboxRelay:
    def __init__(
        self,
        pool: Pool,
        publisher: KafkaPublisher,
        *,
        batch: int = 500,
        idle_poll: float = 1.0,
        keep_days: int = 7,
        prune_every: float = 3600.0,
    ) -> None:
        self._pool = pool
        self._publisher = publisher
        self._batch = batch
        self._idle_poll = idle_poll
        self._wakeup = asyncio.Event()
        self._keep_days = keep_days
        self._prune_every = prune_every
        self._pruned_at: float | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Relay until ``stop``; rows committed before ``stop`` are relayed first."""
        listener = await self._pool.acquire()
        try:
            await listener.add_listener(OUTBOX_CHANNEL, self._on_notify)
            while True:
                relayed = await self.relay_once()
                progress()
                if relayed:
                    continue
                if stop.is_set():
                    return
                if await self.prune_when_due():
                    continue
                self._wakeup.clear()
                await wait_any(self._wakeup, stop, within=self._idle_poll)
        finally:
            await unlisten(listener, OUTBOX_CHANNEL, self._on_notify)
            await give_back(self._pool, listener)

    def _on_notify(self, *_: Any) -> None:
        self._wakeup.set()

    async def relay_once(self) -> int:
        """Publish one batch of unpublished rows; return how many were published."""
        async with self._pool.acquire() as conn, conn.transaction():
            if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", _RELAY_LOCK):
                metrics.OUTBOX_BACKLOG.set(0)  # another replica relays and reports
                return 0
            rows = await conn.fetch(
                "SELECT id, topic, key, payload FROM outbox WHERE published_at IS NULL"
                " ORDER BY id LIMIT $1",
                self._batch,
            )
            backlog = len(rows)
            if backlog == self._batch:
                backlog = await conn.fetchval(
                    "SELECT count(*) FROM (SELECT 1 FROM outbox WHERE published_at IS NULL"
                    " LIMIT $1) AS unpublished",
                    BACKLOG_COUNT_CAP,
                )
            metrics.OUTBOX_BACKLOG.set(backlog)
            if not rows:
                return 0
            await self._publisher.publish_all(
                OutgoingMessage(r["topic"], r["key"], bytes(r["payload"])) for r in rows
            )
            crash_point("outbox.after_publish")
            await conn.execute(
                "UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[])",
                [r["id"] for r in rows],
            )
        metrics.OUTBOX_PUBLISHED.inc(len(rows))
        metrics.OUTBOX_BACKLOG.set(max(backlog - len(rows), 0))
        return len(rows)

    async def prune_when_due(self) -> int:
        """Delete one batch of rows published more than ``keep_days`` ago if a pruning is
        due (or under way); return how many were deleted."""
        clock = time.monotonic()
        if self._pruned_at is not None and clock - self._pruned_at < self._prune_every:
            return 0
        try:
            deleted = await prune_published(
                self._pool, older_than_days=self._keep_days, limit=PRUNE_BATCH
            )
        except Exception as exc:  # the relay goes on; pruning is tried next round
            self._pruned_at = clock
            log.warning("outbox pruning failed; next try after prune_every", error=repr(exc))
            return 0
        if deleted < PRUNE_BATCH:
            self._pruned_at = clock
        if deleted:
            log.info("outbox pruned", deleted=deleted, older_than_days=self._keep_days)
        return deleted


async def prune_published(pool: Pool, *, older_than_days: int = 7, limit: int = PRUNE_BATCH) -> int:
    """Delete up to ``limit`` rows published more than ``older_than_days`` ago."""
    status: str = await pool.execute(
        "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox"
        " WHERE published_at < now() - make_interval(days => $1) ORDER BY id LIMIT $2)",
        older_than_days,
        limit,
    )
    return int(status.rsplit(maxsplit=1)[-1])


__all__ = ["OutboxRelay", "prune_published"]
