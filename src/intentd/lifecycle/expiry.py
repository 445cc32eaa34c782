"""Expiring intents on time, without scanning the table.

An intent is not expired at ``expires_at``: a payment mined before it is read by the
poller only ``confirmations`` blocks later and applied by the lifecycle later still,
and it is credited (on time) only while the intent is PENDING; expired too early it
would be refunded as a late deposit and the merchant, paid on time, not paid. So a
PENDING intent is expired when both hold:

- ``now >= expires_at + intents.expiry_grace_seconds``: the grace covers the source
  chain's confirmations and the poller's interval, so by then a poller that keeps up
  has published every deposit mined before ``expires_at`` (one down or behind by more
  than the grace is not waited for);
- the lifecycle group (every replica) has applied the deposits logs up to a moment at
  least ``expires_at + intents.expiry_grace_seconds``: the loop reads the logs' end
  offsets (:class:`~intentd.lifecycle.ports.LogProgress`) and, in later rounds, waits
  until the group's committed positions reach them; a lagging lifecycle (a restart
  with a backlog) holds expiries back until it has caught up.

Without a :class:`LogProgress` (the tests' loops) only the first holds. Past
``intents.expiry_grace_max_seconds`` after ``expires_at`` an intent is expired even if
the logs are not applied that far (the brokers unreachable for that long), counted
``intentd_intents_expired_total{outcome="forced"}`` and logged at error: a payment
applied after that is refunded as a late deposit.

PENDING intents past ``expires_at`` plus the grace are found through the partial index
``intents_pending_by_expiry`` and expired one transaction each (an intent that got
funded meanwhile is left alone: :meth:`Intent.expire` re-checks under the row lock).
Between rounds the loop sleeps until the next expiry (``expires_at`` from the index,
plus the grace), at most ``max_sleep`` seconds, so an expiry happens within about a
second of its time (a second or two more with a :class:`LogProgress`: a round reads the
end offsets, a later one sees them committed). Several lifecycle replicas may run it:
each intent is expired once (row lock plus the status check).

An intent that expires with nothing to refund ends EXPIRED with ``intent_expired``;
one holding more than the token's ``min_sweep`` moves to REFUNDING and ends with the
``intent_refunded`` of its ``expired`` refund (:mod:`intentd.domain.intent`).

The same loop keeps the event log to ``intents.event_retention_days``: every
``prune_every`` seconds (an hour; first at start) it deletes older events
(:meth:`~intentd.lifecycle.repositories.Events.prune`), one batch of ``prune_batch`` per
round until none is left, so a large backlog never holds expiries back; several replicas
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
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import structlog

from intentd import observability as metrics
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.failures import Failure
from intentd.lifecycle.handlers import expire
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.ports import LogProgress, Store, UnitOfWork
from intentd.settings import Settings
from intentd.supervision import progress
from intentd.wait import wait_any

log = structlog.get_logger()

PROGRESS_TIMEOUT = 5.0
"""Seconds a round waits for the brokers' answer on the logs' progress (then: unknown)."""

FORCED = "forced"
"""The ``outcome`` label of an expiry past ``intents.expiry_grace_max_seconds`` that did
not wait for the deposits logs to be applied."""


class Expiry:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        book: ChainBook,
        max_sleep: float = 1.0,
        batch: int = 100,
        prune_every: float = 3600.0,
        prune_batch: int = 1_000,
        progress: LogProgress | None = None,
    ) -> None:
        self._book = book
        self._retention_days = settings.intents.event_retention_days
        self._grace = timedelta(seconds=settings.intents.expiry_grace_seconds)
        self._grace_max = timedelta(seconds=settings.intents.expiry_grace_max_seconds)
        self._progress = progress
        self._barrier: tuple[datetime, Mapping[tuple[str, int], int]] | None = None
        """When the end offsets were read (after this moment), and the end offsets."""
        self._applied: datetime | None = None
        """Every message published to the deposits logs before this moment is applied."""
        self._store = store
        self._max_sleep = max_sleep
        self._batch = batch
        self._failed: set[int] = set()
        self._prune_every = prune_every
        self._prune_batch = prune_batch
        self._pruned_at: float | None = None
        """When the last pruning finished (nothing older left, or it failed)."""

    async def run(self, stop: asyncio.Event) -> None:
        """Expire and prune until ``stop``. A database that does not answer ends it with
        the error (its supervisor waits for the database and runs it again)."""
        while not stop.is_set():
            await self.prune_when_due()
            expired = await self.expire_due()
            progress()
            if expired >= self._batch:
                continue
            await self._sleep(stop)

    async def expire_due(self) -> int:
        """Expire what is due now; return how many intents were looked at."""
        now = datetime.now(UTC)
        applied_by = await self._applied_by(now)
        forced_by = now - self._grace_max
        looked_at = 0
        async with self._store.unit() as uow:
            if applied_by is not None:
                due_by = min(now, applied_by) - self._grace
                looked_at += await self._expire(uow, now, due_by, forced=False)
                if due_by >= forced_by:
                    return looked_at
            return looked_at + await self._expire(uow, now, forced_by, forced=True)

    async def _applied_by(self, now: datetime) -> datetime | None:
        """A moment before which every message of the deposits logs has been applied
        (``now`` without a :class:`LogProgress`); None if none is known yet."""
        if self._progress is None:
            return now
        try:
            async with asyncio.timeout(PROGRESS_TIMEOUT):  # never holds forced expiries back
                if self._barrier is not None and await self._progress.applied(self._barrier[1]):
                    self._applied, self._barrier = self._barrier[0], None
                if self._barrier is None:
                    ends = await self._progress.ends()
                    if ends is not None:
                        self._barrier = (now, ends)
        except Exception as exc:  # unknown this round (forced expiries go on): the brokers
            # away (their probe tells that outage) or the consumer rejoining its group
            log.debug("expiry: how far the deposits logs are applied is unknown", error=repr(exc))
        return self._applied

    async def _expire(
        self, uow: UnitOfWork, now: datetime, due_by: datetime, *, forced: bool
    ) -> int:
        due = await uow.intents.due_for_expiry(due_by, limit=self._batch, skip=sorted(self._failed))
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
            if outcome is not Outcome.EXPIRED:
                metrics.EXPIRED.labels(outcome.value).inc()
                log.debug("intent not due after all", intent_id=intent_id)
            elif forced:
                metrics.EXPIRED.labels(FORCED).inc()
                log.error(
                    "intent expired before the deposits logs were applied up to its expiry",
                    intent_id=intent_id,
                    applied_by=self._applied,
                    expiry_grace_max_seconds=self._grace_max.total_seconds(),
                )
            else:
                metrics.EXPIRED.labels(outcome.value).inc()
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
                deleted = await uow.events.prune(older_than_days=days, limit=self._prune_batch)
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
            upcoming = await uow.intents.next_expiry()
        delay = self._max_sleep
        if upcoming is not None:
            due_in = upcoming + self._grace - datetime.now(UTC)
            delay = min(max(due_in.total_seconds(), 0.0), delay)
        await wait_any(stop, within=delay + 0.01)
