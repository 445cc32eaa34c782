"""The webhooks' upkeep: the health gauges, and forgetting deliveries past retention.

Every 15 s it sets the gauges (deliveries pending, the oldest one's age, endpoints
disabled); every hour it forgets what ended before the retention. An outage ends it
(its supervisor waits and starts it again); any other failure is logged and tried at
the next round: gauges and pruning must not stop the role.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime, timedelta

import structlog

from intentd import observability as metrics
from intentd.supervision import Diagnose, Kind, progress
from intentd.webhooks.ports import WebhooksUpkeep

__all__ = ["HEALTH_EVERY", "PRUNE_EVERY", "maintain"]

log = structlog.get_logger()
HEALTH_EVERY = 15.0
PRUNE_EVERY = 3600.0


async def maintain(
    store: WebhooksUpkeep, retention: timedelta, stop: asyncio.Event, diagnose: Diagnose
) -> None:
    """Gauges and pruning until ``stop`` (see the module)."""
    last_prune = 0.0
    while not stop.is_set():
        try:
            now = datetime.now(UTC)
            health = await store.health(now)
            if time.monotonic() - last_prune > PRUNE_EVERY:
                pruned = await store.prune(now - retention)
                last_prune = time.monotonic()
                if pruned:
                    log.info("webhook deliveries pruned", count=pruned)
        except Exception as exc:
            if diagnose(exc).kind is Kind.OUTAGE:
                raise
            log.exception("webhook maintenance failed")
        else:
            metrics.WEBHOOK_PENDING.set(health.pending)
            metrics.WEBHOOK_OLDEST_PENDING.set(health.oldest_seconds)
            metrics.WEBHOOK_DISABLED_ENDPOINTS.set(health.disabled_endpoints)
            progress()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), HEALTH_EVERY)
