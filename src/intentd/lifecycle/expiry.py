"""Expiring intents on time, without scanning the table.

An intent is expired ``intents.expiry_grace_seconds`` after ``expires_at``, not at
it: a payment mined before ``expires_at`` is read by the poller only ``confirmations``
blocks later and applied by the lifecycle later still, and it is credited (on time)
only while the intent is PENDING; expired at ``expires_at`` it would be refunded as a
late deposit and the merchant, paid on time, not paid. The grace must cover the
slowest source chain's confirmation time plus the lifecycle's lag (docs/intents.md).

PENDING intents past ``expires_at`` plus the grace are found through the partial index
``intents_pending_by_expiry`` and expired one transaction each (an intent that got
funded meanwhile is left alone: :meth:`Intent.expire` re-checks under the row lock).
Between rounds the loop sleeps until the next expiry (``expires_at`` from the index,
plus the grace), at most ``max_sleep`` seconds, so an expiry happens within about a
second of its time. Several lifecycle replicas may run it: each intent is expired once (row lock
plus the status check).

An intent that expires with nothing to refund ends EXPIRED with ``intent_expired``;
one holding more than the token's ``min_sweep`` moves to REFUNDING and ends with the
``intent_refunded`` of its ``expired`` refund (:mod:`intentd.domain.intent`).

The same loop keeps the event log to ``intents.event_retention_days``: every
``prune_every`` seconds (an hour; first at start) it deletes older events
(:meth:`~intentd.lifecycle.ports.UnitOfWork.prune_events`), one batch of ``prune_batch`` per round
until none is left, so a large backlog never holds expiries back; several replicas
pruning at once skip each other's rows. A pruning that fails for another reason than
an unavailable database is logged and tried again after ``prune_every``: it never
stops expiries.

One intent never stops the loop (nor, with it, the lifecycle role): an intent whose
expiry fails for a reason that would only repeat (:mod:`intentd.lifecycle.failures`,
as the store classifies it) is logged, counted
(``intentd_intents_expired_total{outcome="error"}``) and left alone by this process
until it restarts; a transient database error leaves it for the next round.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import structlog

from intentd import observability as metrics
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.failures import Failure
from intentd.lifecycle.handlers import expire
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.ports import Store
from intentd.settings import Settings
from intentd.wait import wait_any

log = structlog.get_logger()


class Expiry:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        max_sleep: float = 1.0,
        batch: int = 100,
        prune_every: float = 3600.0,
        prune_batch: int = 1_000,
    ) -> None:
        self._book = ChainBook.of_settings(settings)
        self._retention_days = settings.intents.event_retention_days
        self._grace = timedelta(seconds=settings.intents.expiry_grace_seconds)
        self._store = store
        self._max_sleep = max_sleep
        self._batch = batch
        self._failed: set[int] = set()
        self._prune_every = prune_every
        self._prune_batch = prune_batch
        self._pruned_at: float | None = None
        """When the last pruning finished (nothing older left, or it failed)."""

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.prune_when_due()
                expired = await self.expire_due()
            except Exception as exc:
                if self._store.classify(exc) is not Failure.UNAVAILABLE:
                    raise
                log.warning("expiry: the database is unavailable; next round", error=repr(exc))
                await wait_any(stop, within=self._max_sleep)
                continue
            if expired >= self._batch:
                continue
            await self._sleep(stop)

    async def expire_due(self) -> int:
        """Expire what is due now; return how many intents were looked at."""
        now = datetime.now(UTC)
        due_by = now - self._grace
        async with self._store.unit() as uow:
            due = await uow.due_for_expiry(due_by, limit=self._batch, skip=sorted(self._failed))
            for intent_id in due:
                try:
                    outcome = await expire(uow, self._book, intent_id, now=now, due_by=due_by)
                except Exception as exc:
                    failure = self._store.classify(exc)
                    if failure is Failure.UNAVAILABLE:
                        raise  # the unit's connection is gone: the next round gets another
                    if failure is Failure.PERMANENT:
                        self._failed.add(intent_id)
                    metrics.EXPIRED.labels("error").inc()
                    log.exception(
                        "intent could not be expired",
                        intent_id=intent_id,
                        error=repr(exc),
                        retried=failure is not Failure.PERMANENT,
                    )
                    continue
                metrics.EXPIRED.labels(outcome.value).inc()
                if outcome is not Outcome.EXPIRED:
                    log.debug("intent not due after all", intent_id=intent_id)
        return len(due)

    async def prune_when_due(self) -> int:
        """Delete one batch of events past their retention if a pruning is due (or under
        way); return how many were deleted."""
        clock = time.monotonic()
        if self._pruned_at is not None and clock - self._pruned_at < self._prune_every:
            return 0
        days = self._retention_days
        try:
            async with self._store.unit() as uow:
                deleted = await uow.prune_events(older_than_days=days, limit=self._prune_batch)
        except Exception as exc:
            if self._store.classify(exc) is Failure.UNAVAILABLE:
                raise
            self._pruned_at = clock
            log.exception("event log pruning failed; next try after prune_every", error=repr(exc))
            return 0
        if deleted < self._prune_batch:
            self._pruned_at = clock
        if deleted:
            log.info("event log pruned", deleted=deleted, older_than_days=days)
        return deleted

    async def _sleep(self, stop: asyncio.Event) -> None:
        async with self._store.unit() as uow:
            upcoming = await uow.next_expiry()
        delay = self._max_sleep
        if upcoming is not None:
            due_in = upcoming + self._grace - datetime.now(UTC)
            delay = min(max(due_in.total_seconds(), 0.0), delay)
        await wait_any(stop, within=delay + 0.01)
