"""The webhooks role's PostgreSQL store: record deliveries, lease them, record attempts.

- :meth:`PostgresWebhookStore.record_events` records, in one transaction, each event
  that some enabled endpoint subscribes to (its exact body, once) and one delivery per
  such endpoint (unique per event and endpoint, so Kafka replays add nothing), then
  ``NOTIFY``s :data:`CHANNEL`. The consumer commits its offsets only after it returns.
- :meth:`~PostgresWebhookStore.claim_due` leases due deliveries, fairly
  (``adapters.postgres.webhook_claims``).
- :meth:`~PostgresWebhookStore.record_attempts` stores attempts and applies the
  schedule's decisions to deliveries and endpoints in one transaction
  (``adapters.postgres.webhook_attempts``).
- :meth:`~PostgresWebhookStore.prune` forgets ended deliveries and unreferenced events;
  :meth:`~PostgresWebhookStore.health` reads the backlog for the metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from uuid import UUID

from intentd.adapters.postgres import Pool, db_failures, webhook_attempts, webhook_claims
from intentd.webhooks.matching import Subscription, subscribers
from intentd.webhooks.ports import DueDelivery, EventToRecord, RecordedAttempt

__all__ = ["CHANNEL", "Health", "PostgresWebhookStore"]

CHANNEL = "intentd_webhooks"
"""``NOTIFY``ed when deliveries become due now (new events, redeliveries, recoveries)."""


class Health:
    """What the metrics say about the deliveries (read by :meth:`health`)."""

    def __init__(self, pending: int, oldest_seconds: float, disabled_endpoints: int) -> None:
        self.pending = pending
        self.oldest_seconds = oldest_seconds
        self.disabled_endpoints = disabled_endpoints


class PostgresWebhookStore:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    def unavailable(self, exc: BaseException) -> bool:
        """PostgreSQL could not be reached or did not answer (``adapters.postgres.db_failures``)."""
        return db_failures.unavailable(exc)

    async def record_events(self, events: Sequence[EventToRecord]) -> int:
        if not events:
            return 0
        clients = sorted({e.client_id for e in events})
        async with self._pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "SELECT id, client_id, mode, event_types FROM webhook_endpoints"
                " WHERE enabled AND client_id = ANY($1::uuid[])",
                clients,
            )
            subscriptions = [
                Subscription(
                    r["id"],
                    r["client_id"],
                    r["mode"],
                    frozenset(r["event_types"]) if r["event_types"] is not None else None,
                    True,
                )
                for r in rows
            ]
            by_client: dict[UUID, list[Subscription]] = {}
            for subscription in subscriptions:
                by_client.setdefault(subscription.client_id, []).append(subscription)
            pairs: list[tuple[EventToRecord, UUID]] = [
                (event, s.endpoint_id)
                for event in events
                for s in subscribers(
                    by_client.get(event.client_id, ()),
                    event.client_id,
                    event.mode,
                    event.event_type,
                )
            ]
            if not pairs:
                return 0
            wanted = list({e.event_id: e for e, _ in pairs}.values())
            await conn.executemany(
                "INSERT INTO webhook_events"
                " (id, type, client_id, mode, intent_id, sequence, created_at, body)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
                [
                    (
                        e.event_id,
                        e.event_type,
                        e.client_id,
                        e.mode,
                        e.intent_id,
                        e.sequence,
                        e.created_at,
                        e.body,
                    )
                    for e in wanted
                ],
            )
            status = await conn.execute(
                """
                INSERT INTO webhook_deliveries
                       (event_id, endpoint_id, intent_id, sequence, event_created_at)
                SELECT * FROM unnest($1::text[], $2::uuid[], $3::bigint[], $4::int[],
                                     $5::timestamptz[])
                ON CONFLICT (event_id, endpoint_id) DO NOTHING
                """,
                [e.event_id for e, _ in pairs],
                [endpoint for _, endpoint in pairs],
                [e.intent_id for e, _ in pairs],
                [e.sequence for e, _ in pairs],
                [e.created_at for e, _ in pairs],
            )
            added = int(status.rsplit(maxsplit=1)[-1])
            if added:
                await conn.execute("SELECT pg_notify($1, '')", CHANNEL)
            return added

    async def claim_due(
        self,
        now: datetime,
        limit: int,
        per_endpoint: int,
        lease: timedelta,
        *,
        per_client: int,
        busy: Mapping[UUID, int],
    ) -> list[DueDelivery]:
        async with self._pool.acquire() as conn:
            return await webhook_claims.claim_due(
                conn, now, limit, per_endpoint, lease, per_client=per_client, busy=busy
            )

    async def record_attempts(self, attempts: Sequence[RecordedAttempt]) -> None:
        if not attempts:
            return
        async with self._pool.acquire() as conn, conn.transaction():
            await webhook_attempts.record_attempts(conn, attempts)

    async def prune(self, before: datetime) -> int:
        """Forget deliveries that ended (delivered or failed) before ``before``, with
        their attempts, and the events no delivery refers to any more; how many
        deliveries went."""
        async with self._pool.acquire() as conn, conn.transaction():
            status: str = await conn.execute(
                "DELETE FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1",
                before,
            )
            await conn.execute(
                "DELETE FROM webhook_events ev WHERE ev.recorded_at < $1 AND NOT EXISTS"
                " (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = ev.id)",
                before,
            )
        return int(status.rsplit(maxsplit=1)[-1])

    async def health(self, now: datetime) -> Health:
        async with self._pool.acquire() as conn:
            row = await conn.fetchrow(
                """
                SELECT (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending')
                           AS pending,
                       (SELECT min(created_at) FROM webhook_deliveries WHERE status = 'pending')
                           AS oldest,
                       (SELECT count(*) FROM webhook_endpoints WHERE NOT enabled) AS disabled
                """
            )
        assert row is not None
        oldest = row["oldest"]
        age = max((now - oldest).total_seconds(), 0.0) if oldest is not None else 0.0
        return Health(row["pending"], age, row["disabled"])
