"""What the webhooks role reports: deliveries, attempts, the backlog, disabled endpoints
(docs/webhooks.md, *Operations*).

Each metric is defined here once; :mod:`intentd.observability` exports them all.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from intentd.observability.api_metrics import LATENCY_BUCKETS

__all__ = [
    "WEBHOOK_ATTEMPT_SECONDS",
    "WEBHOOK_DELIVERIES",
    "WEBHOOK_DISABLED_ENDPOINTS",
    "WEBHOOK_ENDPOINTS_DISABLED",
    "WEBHOOK_OLDEST_PENDING",
    "WEBHOOK_PENDING",
    "WEBHOOK_RECORDED",
]

# webhooks (docs/webhooks.md, Operations)
WEBHOOK_DELIVERIES = Counter(
    "intentd_webhook_attempts_total",
    "Webhook attempts by outcome: delivered, retry, failed (no retry left), disabled",
    ["outcome"],
)
WEBHOOK_ATTEMPT_SECONDS = Histogram(
    "intentd_webhook_attempt_seconds",
    "One webhook attempt: sign, connect, send, read the capped answer",
    buckets=LATENCY_BUCKETS,
)
WEBHOOK_RECORDED = Counter(
    "intentd_webhook_deliveries_recorded_total", "Deliveries recorded from Kafka events"
)
WEBHOOK_PENDING = Gauge("intentd_webhook_pending", "Webhook deliveries not yet delivered or failed")
WEBHOOK_OLDEST_PENDING = Gauge(
    "intentd_webhook_oldest_pending_seconds", "Age of the oldest pending webhook delivery"
)
WEBHOOK_ENDPOINTS_DISABLED = Counter(
    "intentd_webhook_endpoints_disabled_total",
    "Endpoints disabled by the dispatcher: gone (410) or failing (5 days)",
    ["reason"],
)
WEBHOOK_DISABLED_ENDPOINTS = Gauge(
    "intentd_webhook_disabled_endpoints", "Webhook endpoints currently disabled"
)
