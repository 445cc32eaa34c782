"""Logging setup and every Prometheus metric, defined once.

Logs are structlog JSON lines on stderr. Code binds ``chain``, ``intent_id`` and
``tx_hash`` per unit of work with ``structlog.contextvars.bound_contextvars``.
Secrets are never passed to a logger.
"""

from __future__ import annotations

import logging
import sys

import structlog
import structlog.tracebacks
from prometheus_client import Counter, Gauge, Histogram


def configure_logging(level: str = "info") -> None:
    """Send structlog JSON to stderr at ``level``; call once at process start."""
    numeric = logging.getLevelNamesMapping()[level.upper()]
    logging.basicConfig(stream=sys.stderr, level=numeric, format="%(message)s")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            # Tracebacks without frame locals: locals can hold keys, tokens and seeds.
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            ),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


# --- poller -------------------------------------------------------------------------
POLLER_BLOCK = Gauge("intentd_poller_block", "Last block processed", ["chain"])
BLOCKS_BEHIND = Gauge(
    "intentd_blocks_behind_head", "Confirmed head minus last processed block", ["chain"]
)
DEPOSITS_PUBLISHED = Counter(
    "intentd_deposits_published_total", "Deposits published to Kafka", ["chain"]
)
REORGS = Counter("intentd_reorgs_total", "Reorgs detected (rewinds)", ["chain"])
RETRACTIONS = Counter(
    "intentd_retractions_published_total", "Deposits retracted after a deep reorg", ["chain"]
)
RPC_ERRORS = Counter("intentd_rpc_errors_total", "Failed RPC calls", ["chain", "method"])
RPC_FAILOVERS = Counter("intentd_rpc_failovers_total", "Switches to another RPC URL", ["chain"])
WATCHED_ADDRESSES = Gauge("intentd_watched_addresses", "Intent addresses watched", ["chain"])

# --- lifecycle ----------------------------------------------------------------------
MESSAGES = Counter(
    "intentd_lifecycle_messages_total", "Messages handled by the lifecycle", ["kind", "outcome"]
)
DEPOSITS = Counter(
    "intentd_deposits_total", "Deposits recorded, by disposition", ["chain", "disposition"]
)
TRANSITIONS = Counter(
    "intentd_state_transitions_total", "Intent status changes", ["from_status", "to_status"]
)
DEAD_LETTERS = Counter("intentd_dead_letters_total", "Messages sent to the DLQ", ["topic"])
UNCREDIT_ALERTS = Counter(
    "intentd_reorg_alerts_total",
    "Retracted deposits that could not be un-credited (something irreversible happened)",
    ["chain"],
)
ACTION_ALERTS = Counter(
    "intentd_action_alerts_total", "Actions that failed for good (operator action needed)", ["kind"]
)
EXPIRED = Counter("intentd_intents_expired_total", "PENDING intents expired", ["outcome"])
HANDLE_SECONDS = Histogram(
    "intentd_lifecycle_handle_seconds", "Time to apply one message batch", ["kind"]
)

# --- outbox -------------------------------------------------------------------------
OUTBOX_PUBLISHED = Counter("intentd_outbox_published_total", "Outbox rows relayed to Kafka")
OUTBOX_BACKLOG = Gauge("intentd_outbox_backlog", "Outbox rows not yet relayed")

# --- executor -----------------------------------------------------------------------
ACTION_OUTCOMES = Counter(
    "intentd_action_outcomes_total",
    "Actions finished or retried by the executor",
    ["chain", "kind", "outcome"],
)
CHAIN_TRANSACTIONS = Counter(
    "intentd_chain_transactions_total",
    "Executor transactions by event (sent, rebroadcast, replaced, confirmed, reverted, dropped)",
    ["chain", "purpose", "event"],
)
SEND_REFUSALS = Counter(
    "intentd_send_refusals_total", "Broadcasts a node refused, by reason", ["chain", "reason"]
)
NONCE_GAPS = Counter(
    "intentd_nonce_gaps_total",
    "Nonces below a signer's next nonce with no open transaction of ours (found at reconcile)",
    ["chain"],
)
EXECUTOR_ACTIVE = Gauge(
    "intentd_executor_active", "1 while this process leads the chain", ["chain"]
)
