"""What the API reports: requests, liquidity refusals, intent creation.

Each metric is defined here once; :mod:`intentd.observability` exports them all.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "API_IN_FLIGHT",
    "API_REQUESTS",
    "API_SECONDS",
    "INTENTS_CREATED",
    "INTENT_WRITE_BATCH",
    "INTENT_WRITE_SECONDS",
    "LIQUIDITY_REFUSALS",
]

# --- API ----------------------------------------------------------------------------
# With ``intentd api --workers N`` every worker writes its values to files of a
# directory the parent process reads (prometheus_client's multiprocess mode, see
# ``api.workers``): counters and histograms add up over the workers.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
API_REQUESTS = Counter(
    "intentd_api_requests_total",
    "API requests answered, by route template and status (route 'unmatched': no route)",
    ["method", "route", "status"],
)
API_SECONDS = Histogram(
    "intentd_api_request_seconds",
    "Time from a request's arrival to the end of its answer",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
)
API_IN_FLIGHT = Gauge(
    "intentd_api_requests_in_flight",
    "API requests being answered",
    multiprocess_mode="livesum",
)
LIQUIDITY_REFUSALS = Counter(
    "intentd_liquidity_refusals_total",
    "Requests refused for the relayer's float, by destination and reason (insufficient: a"
    " create or single quote answered 409 insufficient_liquidity; unknown: any quote or"
    " create answered 503 liquidity_unknown)",
    ["chain", "reason"],
)
INTENTS_CREATED = Counter(
    "intentd_intents_created_total", "Intents created (API and CLI)", ["source_chain"]
)
INTENT_WRITE_SECONDS = Histogram(
    "intentd_intent_write_seconds",
    "One group commit of new intents: indexes drawn, addresses derived, insert committed",
    buckets=LATENCY_BUCKETS,
)
INTENT_WRITE_BATCH = Histogram(
    "intentd_intent_write_batch_size",
    "New intents per group commit",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)
