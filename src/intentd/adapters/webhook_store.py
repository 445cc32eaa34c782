"""The webhooks role's PostgreSQL store: record deliveries, lease them, record attempts.

- :meth:`PostgresWebhookStore.record_events` records, in one transaction, each event
  that some enabled endpoint subscribes to (its exact body, once) and one delivery per
  such endpoint (unique per event and endpoint, so Kafka replays add nothing), then
  ``NOTIFY``s :data:`CHANNEL`. The consumer commits its offsets only after it returns.
- :meth:`claim_due` leases due deliveries (``FOR UPDATE SKIP LOCKED`` on the rows
  picked, re-checked under the lock), at most ``per_endpoint`` in flight per endpoint
  counting every process's leases, a fair share per client (``webhooks.fairness``:
  a cap per client in this process, least loaded clients first, in turn), and never
  a first attempt of an intent's event while an earlier event of that intent to that
  endpoint is unsent. A lease that expires (its process died) makes the delivery due
  again.
- :meth:`record_attempt` stores the attempt and applies the schedule's decision to the
  delivery and its endpoint (failing since, disabled; a disabled endpoint's pending
  deliveries become ``failed``, to be recovered) in one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from intentd.adapters import db_failures
from intentd.adapters.postgres import Pool
from intentd.webhooks.matching import Subscription, subscribers
from intentd.webhooks.ports import DueDelivery, EventToRecord, RecordedAttempt
from intentd.webhooks.schedule import Decision

__all__ = ["CHANNEL", "Health", "PostgresWebhookStore", "outcome_of"]

CHANNEL = "intentd_webhooks"
"""``NOTIFY``ed when deliveries become due now (new events, redeliveries, recoveries)."""
RESPONSE_HEAD_BYTES = 4096

_CLAIM = """
WITH running AS (
    SELECT * FROM unnest($5::uuid[], $6::int[]) AS r (client_id, n)
), candidates AS (
    SELECT d.id, d.next_attempt_at, d.endpoint_turn, e.client_id, coalesce(r.n, 0) AS running
      FROM webhook_endpoints e
      LEFT JOIN running r ON r.client_id = e.client_id
      CROSS JOIN LATERAL (
            SELECT count(*) AS n FROM webhook_deliveries x
             WHERE x.endpoint_id = e.id AND x.lease_until IS NOT NULL
               AND x.lease_until > $1 AND x.status = 'pending'
      ) busy
      CROSS JOIN LATERAL (
            SELECT d.id, d.next_attempt_at,
                   row_number() OVER (ORDER BY d.next_attempt_at, d.id) AS endpoint_turn
              FROM webhook_deliveries d
             WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= $1
               AND (d.lease_until IS NULL OR d.lease_until <= $1)
               AND (d.attempts > 0 OR d.intent_id IS NULL OR NOT EXISTS (
                    SELECT 1 FROM webhook_deliveries p
                     WHERE p.endpoint_id = d.endpoint_id AND p.intent_id = d.intent_id
                       AND p.sequence < d.sequence AND p.status = 'pending'
                       AND p.attempts = 0))
             ORDER BY d.next_attempt_at, d.id
             LIMIT greatest(least($3 - busy.n, $7 - coalesce(r.n, 0)), 0)
      ) d
     WHERE e.enabled AND coalesce(r.n, 0) < $7
), ranked AS (
    SELECT id, next_attempt_at, running,
           row_number() OVER (PARTITION BY client_id
                              ORDER BY endpoint_turn, next_attempt_at, id) AS client_turn
      FROM candidates
), picked AS (
    SELECT id FROM ranked
     WHERE client_turn <= $7 - running
     ORDER BY running + client_turn, next_attempt_at, id
     LIMIT $2
), leased AS (
    UPDATE webhook_deliveries w SET lease_until = $4
     WHERE w.id = ANY(ARRAY(
            SELECT id FROM webhook_deliveries
             WHERE id = ANY(ARRAY(SELECT id FROM picked)) AND status = 'pending'
               AND (lease_until IS NULL OR lease_until <= $1)
             FOR UPDATE SKIP LOCKED))
    RETURNING w.id, w.endpoint_id, w.event_id, w.round_attempts, w.next_attempt_at
)
SELECT l.id, l.endpoint_id, e.client_id, l.event_id, l.round_attempts, ev.body, e.url,
       e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
       e.failing_since
  FROM leased l
  JOIN webhook_events ev ON ev.id = l.event_id
  JOIN webhook_endpoints e ON e.id = l.endpoint_id
 ORDER BY l.next_attempt_at, l.id
"""
"""The rule of :func:`webhooks.fairness.fair_share`: each endpoint's due deliveries
within its room (``$3`` less its leases, every process's), numbered in turn; each
client's numbered in turn over its endpoints; at most ``$7`` (the per-client cap) less
what runs here (``$5``/``$6``); least loaded client first. The endpoints of a client at
its cap are not read at all, so a capped client's backlog costs a claim nothing; rows
are locked and leased by id (``= ANY(ARRAY(...))``: index lookups whatever the
planner's estimates)."""


def outcome_of(decision: Decision) -> str:
    if decision.delivered:
        return "delivered"
    if decision.disable is not None:
        return "disabled"
    return "failed" if decision.next_attempt_at is None else "retry"


def _status(decision: Decision) -> str:
    if decision.delivered:
        return "delivered"
    return "pending" if decision.next_attempt_at is not None else "failed"


def _head(text: str) -> str:
    return text.encode()[:RESPONSE_HEAD_BYTES].decode("utf-8", "ignore").replace("\x00", "")


@dataclass(frozen=True, slots=True)
class _EndpointChange:
    endpoint_id: UUID
    succeeded: bool
    """The endpoint's latest attempt of the batch succeeded."""
    failed_at: datetime | None
    """Its first failure of the batch (after its latest success, if any)."""
    disable: str | None
    at: datetime


def _endpoint_changes(attempts: Sequence[RecordedAttempt]) -> list[_EndpointChange]:
    """Per endpoint, what a batch of attempts changes (in the order they were made)."""
    changes: dict[UUID, _EndpointChange] = {}
    for r in sorted(attempts, key=lambda r: r.at):
        before = changes.get(r.delivery.endpoint_id)
        if r.decision.delivered:
            change = _EndpointChange(r.delivery.endpoint_id, True, None, None, r.at)
        else:
            first = before.failed_at if before is not None and before.failed_at else r.at
            change = _EndpointChange(r.delivery.endpoint_id, False, first, None, r.at)
        disable = r.decision.disable.value if r.decision.disable is not None else None
        if disable is None and before is not None:
            disable = before.disable
        changes[r.delivery.endpoint_id] = _EndpointChange(
            change.endpoint_id, change.succeeded, change.failed_at, disable, change.at
        )
    return list(changes.values())


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
        """PostgreSQL could not be reached or did not answer (``adapters.db_failures``)."""
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
        clients = list(busy)
        async with self._pool.acquire() as conn:
            rows = await conn.fetch(
                _CLAIM,
                now,
                limit,
                per_endpoint,
                now + lease,
                clients,
                [busy[c] for c in clients],
                per_client,
            )
        claimed = []
        for r in rows:
            sealed = [bytes(r["secret_sealed"])]
            expires = r["previous_secret_expires_at"]
            if r["previous_secret_sealed"] is not None and expires is not None and expires > now:
                sealed.append(bytes(r["previous_secret_sealed"]))
            claimed.append(
                DueDelivery(
                    id=r["id"],
                    endpoint_id=r["endpoint_id"],
                    client_id=r["client_id"],
                    url=r["url"],
                    event_id=r["event_id"],
                    body=bytes(r["body"]),
                    sealed_secrets=tuple(sealed),
                    round_attempts=r["round_attempts"],
                    failing_since=r["failing_since"],
                )
            )
        return claimed

    async def record_attempts(self, attempts: Sequence[RecordedAttempt]) -> None:
        if not attempts:
            return
        endpoints = _endpoint_changes(attempts)
        async with self._pool.acquire() as conn, conn.transaction():
            kept = await conn.fetch(
                """
                UPDATE webhook_deliveries d
                   SET attempts = d.attempts + 1, round_attempts = d.round_attempts + 1,
                       status = u.status, next_attempt_at = coalesce(u.next_at, d.next_attempt_at),
                       lease_until = NULL, updated_at = u.at
                  FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[])
                       AS u (id, status, next_at, at)
                 WHERE d.id = u.id
                RETURNING d.id
                """,
                [r.delivery.id for r in attempts],
                [_status(r.decision) for r in attempts],
                [r.decision.next_attempt_at for r in attempts],
                [r.at for r in attempts],
            )
            present = {row["id"] for row in kept}  # an endpoint deleted meanwhile: none
            rows = [r for r in attempts if r.delivery.id in present]
            await conn.execute(
                """
                INSERT INTO webhook_attempts (delivery_id, endpoint_id, attempted_at,
                       status_code, latency_ms, error, response_head, outcome, next_attempt_at)
                SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::timestamptz[], $4::int[],
                                     $5::int[], $6::text[], $7::text[], $8::text[],
                                     $9::timestamptz[])
                """,
                [r.delivery.id for r in rows],
                [r.delivery.endpoint_id for r in rows],
                [r.at for r in rows],
                [r.attempt.status for r in rows],
                [max(int(r.attempt.latency * 1000), 0) for r in rows],
                [r.attempt.error for r in rows],
                [_head(r.attempt.response_head) for r in rows],
                [outcome_of(r.decision) for r in rows],
                [r.decision.next_attempt_at for r in rows],
            )
            await conn.execute(
                """
                UPDATE webhook_endpoints e
                   SET failing_since = CASE WHEN u.succeeded THEN NULL
                                            ELSE coalesce(e.failing_since, u.failed_at) END,
                       enabled = e.enabled AND u.disable IS NULL,
                       disabled_reason = coalesce(u.disable, e.disabled_reason),
                       disabled_at = CASE WHEN u.disable IS NULL THEN e.disabled_at
                                          ELSE u.at END,
                       updated_at = u.at
                  FROM unnest($1::uuid[], $2::bool[], $3::timestamptz[], $4::text[],
                              $5::timestamptz[]) AS u (id, succeeded, failed_at, disable, at)
                 WHERE e.id = u.id
                """,
                [c.endpoint_id for c in endpoints],
                [c.succeeded for c in endpoints],
                [c.failed_at for c in endpoints],
                [c.disable for c in endpoints],
                [c.at for c in endpoints],
            )
            disabled = [c.endpoint_id for c in endpoints if c.disable is not None]
            if disabled:
                await conn.execute(
                    "UPDATE webhook_deliveries SET status = 'failed', lease_until = NULL,"
                    " updated_at = now() WHERE endpoint_id = ANY($1::uuid[])"
                    " AND status = 'pending'",
                    disabled,
                )

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
