"""The bounded wait of a reorg hold: an operator alert when a deposit stays orphaned.

A retraction the lifecycle cannot undo holds the intent's spending actions until the
same transfer is back on chain (:meth:`~intentd.lifecycle.repositories.Holds.hold`).
Most reorged transfers come back within a few blocks; one that has not after
``alert_after`` seconds was probably replaced (a double spend) and an operator must
decide: :class:`HoldWatch` raises one alert per such deposit (error log and
``intentd_reorg_holds_overdue_total``). The actions stay held: releasing them
without the funds would only fail on chain, or spend what the relayer is owed.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import structlog

from intentd import observability as metrics
from intentd.lifecycle.ports import Store
from intentd.supervision import progress
from intentd.wait import wait_any

__all__ = ["HOLD_ALERT_AFTER", "HoldWatch"]

log = structlog.get_logger()

HOLD_ALERT_AFTER = 1800.0
"""Seconds a deposit may stay orphaned before the operator is alerted."""


class HoldWatch:
    def __init__(
        self, store: Store, *, alert_after: float = HOLD_ALERT_AFTER, interval: float = 30.0
    ) -> None:
        self._store = store
        self._alert_after = alert_after
        self._interval = interval

    async def run(self, stop: asyncio.Event) -> None:
        """Check every ``interval`` seconds until ``stop``. A database that does not answer
        ends it with the error (its supervisor waits for the database and runs it again)."""
        while not stop.is_set():
            await self.check()
            progress()
            await wait_any(stop, within=self._interval)

    async def check(self) -> int:
        """Alert on each hold older than the bound (once each); return how many."""
        before = datetime.now(UTC) - timedelta(seconds=self._alert_after)
        async with self._store.unit() as uow:
            found = await uow.holds.overdue(before=before)
        for hold in found:
            metrics.REORG_HOLDS_OVERDUE.labels(hold.chain).inc()
            log.error(
                "a deposit removed by a reorg is still not back on chain; its intent's"
                " spending actions stay held; operator action needed",
                intent_id=hold.intent_id,
                chain=hold.chain,
                tx_hash=hold.tx_hash,
                orphaned_at=hold.orphaned_at.isoformat(),
            )
        return len(found)
