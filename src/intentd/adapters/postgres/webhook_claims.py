"""Leasing due webhook deliveries in PostgreSQL, fairly (``webhooks.fairness``).

Guarantees of :func:`claim_due`: it leases due deliveries (``FOR UPDATE SKIP LOCKED``
on the rows picked, re-checked under the lock), at most ``per_endpoint`` in flight per
endpoint counting every process's leases, a fair share per client (a cap per client
in this process, least loaded clients first, in turn), and never a first attempt of
an intent's event while an earlier event of that intent to that endpoint is unsent.
A lease that expires (its process died) makes the delivery due again. A delivery
carries its endpoint's secret, and the previous one while it is still valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from uuid import UUID

from intentd.adapters.postgres import Connection
from intentd.webhooks.ports import DueDelivery

__all__ = ["claim_due"]

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


async def claim_due(
    conn: Connection,
    now: datetime,
    limit: int,
    per_endpoint: int,
    lease: timedelta,
    *,
    per_client: int,
    busy: Mapping[UUID, int],
) -> list[DueDelivery]:
    """Lease at most ``limit`` due deliveries until ``now + lease``; ``busy``: the
    deliveries this process runs now, by client."""
    clients = list(busy)
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
