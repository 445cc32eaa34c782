"""Sends due deliveries: claim, sign, POST, record, schedule the next attempt.

Guarantees:

- **Durable**: a delivery is leased in PostgreSQL while it is sent and its attempt is
  recorded afterwards; a process that dies in between leaves the lease to expire and
  the delivery is sent again by any dispatcher, with the same ``webhook-id`` and body
  (the only source of duplicates: a crash between the answer and the record).
- **Isolation**: each delivery is its own task; at most ``per_endpoint`` are in
  flight per endpoint (counting the leases of every process at each claim; two
  processes claiming at the same instant may briefly exceed it) and
  ``max_in_flight`` per process, so a failing or slow endpoint holds a few slots and
  never delays the others.
- **Fairness between clients**: at most ``per_client`` of one client's attempts are
  in flight in this process, and each claim serves the clients with the fewest
  attempts running first, in turn (``webhooks.fairness``): a client whose endpoints
  all hang, or who has a large backlog, holds at most ``per_client`` slots and another
  client's delivery finds a free slot at once.
- A database error while claiming ends :meth:`Dispatcher.run` (its supervisor,
  ``composition.webhooks``, runs it again once the database answers; nothing
  is lost: leases expire); one while recording an attempt leaves the delivery to be
  sent again when its lease expires. The database away (the store says so,
  ``WebhookStore.unavailable``) is told as its outage (``supervision.report``: one
  line for the process, each failure counted in it), not a line per delivery in
  flight; any other error is logged with its traceback.
- **Order**: within one intent, first attempts to an endpoint go out in ``sequence``
  order (the store does not hand out a delivery before the earlier ones were tried).

Attempts are recorded by group commit: the attempts that finish while one batch is
being written go together in the next transaction (each delivery's task waits for
its own record before it frees its slot).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from uuid import UUID

import structlog

from intentd import observability as metrics
from intentd.faults import crash_point
from intentd.supervision import POSTGRESQL, report
from intentd.webhooks.ports import (
    Attempt,
    DeliverySender,
    DueDelivery,
    RecordedAttempt,
    WebhookStore,
)
from intentd.webhooks.schedule import decide
from intentd.webhooks.secret_box import SecretBox
from intentd.webhooks.signing import signed_headers

__all__ = ["Dispatcher"]

log = structlog.get_logger()
_COALESCE = 0.005
"""Seconds a dispatcher woken only by finished attempts waits before claiming again."""


class Dispatcher:
    def __init__(
        self,
        store: WebhookStore,
        sender: DeliverySender,
        box: SecretBox,
        clock: Callable[[], datetime],
        *,
        max_in_flight: int = 256,
        per_endpoint: int = 4,
        per_client: int = 32,
        lease: timedelta = timedelta(seconds=60),
        idle_poll: float = 1.0,
    ) -> None:
        self._store = store
        self._sender = sender
        self._box = box
        self._clock = clock
        self._max = max_in_flight
        self._per_endpoint = per_endpoint
        self._per_client = per_client
        self._busy: Counter[UUID] = Counter()
        """Attempts in flight here, per client."""
        self._lease = lease
        self._idle_poll = idle_poll
        self._tasks: set[asyncio.Task[None]] = set()
        self._to_record: list[tuple[RecordedAttempt, asyncio.Future[None]]] = []
        self._recording = False
        self._opened: dict[bytes, str] = {}
        self._freed = asyncio.Event()
        self.wakeup = asyncio.Event()
        """Set it (a NOTIFY, a new event) to look for due work at once."""

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def run(self, stop: asyncio.Event) -> None:
        """Dispatch until ``stop``; the attempts in flight are finished and recorded."""
        try:
            while not stop.is_set():
                # Cleared before the claim: a wakeup or a freed slot during the claim
                # (a delivery recorded after its snapshot) makes the next one start at once.
                self.wakeup.clear()
                self._freed.clear()
                claimed = await self.dispatch_once()
                if claimed and self.in_flight < self._max:
                    continue
                waiters = [
                    asyncio.ensure_future(e.wait()) for e in (self.wakeup, stop, self._freed)
                ]
                await asyncio.wait(waiters, timeout=self._idle_poll, return_when="FIRST_COMPLETED")
                for waiter in waiters:
                    waiter.cancel()
                if self._freed.is_set() and not (self.wakeup.is_set() or stop.is_set()):
                    # A slot was freed: let a few more finish before the next claim.
                    await asyncio.sleep(_COALESCE)
        finally:
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)

    def _finished(self, client_id: UUID, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._busy[client_id] -= 1
        if self._busy[client_id] <= 0:
            del self._busy[client_id]
        self._freed.set()

    async def dispatch_once(self) -> int:
        """Claim what is due (within the free slots) and start sending it."""
        free = self._max - len(self._tasks)
        if free <= 0:
            return 0
        due = await self._store.claim_due(
            self._clock(),
            free,
            self._per_endpoint,
            self._lease,
            per_client=self._per_client,
            busy=dict(self._busy),
        )
        for delivery in due:
            task = asyncio.create_task(self._deliver(delivery))
            self._tasks.add(task)
            self._busy[delivery.client_id] += 1
            task.add_done_callback(partial(self._finished, delivery.client_id))
        return len(due)

    async def drain(self) -> None:
        """Wait for every attempt in flight (tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _deliver(self, delivery: DueDelivery) -> None:
        with structlog.contextvars.bound_contextvars(
            event_id=delivery.event_id,
            endpoint_id=str(delivery.endpoint_id),
            delivery_id=delivery.id,
        ):
            try:
                await self._attempt(delivery)
            except Exception as exc:  # the lease expires and it is tried again
                if self._store.unavailable(exc):
                    report(POSTGRESQL, exc)  # the database's outage: told once, not per delivery
                else:
                    log.exception("webhook attempt not recorded")

    async def _attempt(self, delivery: DueDelivery) -> None:
        secrets = [self._secret(s, delivery) for s in delivery.sealed_secrets]
        headers = signed_headers(
            delivery.event_id, int(self._clock().timestamp()), delivery.body, secrets
        )
        headers["content-type"] = "application/json"
        headers["user-agent"] = "intentd-webhooks/1"
        started = time.monotonic()
        attempt: Attempt = await self._sender.send(delivery.url, headers, delivery.body)
        crash_point("webhooks.after_send")
        now = self._clock()
        failed = not (attempt.status is not None and 200 <= attempt.status < 300)
        failing_since = delivery.failing_since
        if failed and failing_since is None:
            failing_since = now
        decision = decide(
            status=attempt.status,
            failed_attempts=delivery.round_attempts + 1,
            now=now,
            failing_since=failing_since,
            retry_after=attempt.retry_after,
        )
        await self._record(RecordedAttempt(delivery, attempt, decision, now))
        outcome = (
            "delivered"
            if decision.delivered
            else "disabled"
            if decision.disable
            else "failed"
            if decision.failed
            else "retry"
        )
        metrics.WEBHOOK_DELIVERIES.labels(outcome).inc()
        metrics.WEBHOOK_ATTEMPT_SECONDS.observe(time.monotonic() - started)
        if decision.disable is not None:
            metrics.WEBHOOK_ENDPOINTS_DISABLED.labels(decision.disable.value).inc()
            log.warning("webhook endpoint disabled", reason=decision.disable.value)
        elif failed:
            log.info(
                "webhook attempt failed",
                status=attempt.status,
                error=attempt.error,
                next_attempt_at=decision.next_attempt_at.isoformat()
                if decision.next_attempt_at
                else None,
            )

    def _secret(self, sealed: bytes, delivery: DueDelivery) -> str:
        opened = self._opened.get(sealed)
        if opened is None:
            if len(self._opened) > 10_000:
                self._opened.clear()
            opened = self._opened[sealed] = self._box.open(sealed, delivery.endpoint_id)
        return opened

    async def _record(self, recorded: RecordedAttempt) -> None:
        """Return once ``recorded`` is committed (with the others of its batch)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._to_record.append((recorded, done))
        if not self._recording:
            self._recording = True
            try:
                while self._to_record:
                    batch, self._to_record = self._to_record, []
                    try:
                        await self._store.record_attempts([r for r, _ in batch])
                    except Exception as exc:
                        for _, waiter in batch:
                            if not waiter.done():
                                waiter.set_exception(exc)
                    else:
                        for _, waiter in batch:
                            if not waiter.done():
                                waiter.set_result(None)
            finally:
                self._recording = False
        await done
