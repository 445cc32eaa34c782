"""What the price sources report: usable prices, pegs, feed answers and read failures
(docs/pricing.md).

Each metric is defined here once; :mod:`intentd.observability` exports them all.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

__all__ = [
    "PRICE_FEED_ANSWER",
    "PRICE_FEED_READ_FAILURES",
    "PRICE_FEED_UPDATED",
    "PRICE_USABLE",
    "TOKEN_DEPEGGED",
]

# prices (docs/pricing.md)
PRICE_USABLE = Gauge(
    "intentd_price_usable",
    "1 while quoting accepts the USD price of a symbol with feeds, 0 while it refuses it"
    " (stale, out of bounds, sequencer down, feeds disagree, unread)",
    ["network", "symbol"],
)
TOKEN_DEPEGGED = Gauge(
    "intentd_token_depegged",
    "1 while a stablecoin's feed is further than pricing.peg_tolerance_bps from 1 USD",
    ["network", "symbol"],
)
PRICE_FEED_ANSWER = Gauge(
    "intentd_price_feed_answer_usd", "Last answer read from a price feed, USD", ["chain", "feed"]
)
PRICE_FEED_UPDATED = Gauge(
    "intentd_price_feed_updated_timestamp_seconds",
    "updatedAt of the last round read from a price feed, unix seconds",
    ["chain", "feed"],
)
PRICE_FEED_READ_FAILURES = Counter(
    "intentd_price_feed_read_failures_total",
    "Reads of a chain's price feeds that failed",
    ["chain"],
)
