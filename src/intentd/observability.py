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
    """Send JSON lines to stderr at ``level``; call once at process start.

    structlog's own loggers and the standard library's (uvicorn, aiokafka, asyncio)
    give the same JSON lines; a library record also names its ``logger``.
    """
    numeric = logging.getLevelNamesMapping()[level.upper()]
    stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    # Tracebacks without frame locals: locals can hold keys, tokens and seeds.
    tracebacks = structlog.processors.ExceptionRenderer(
        structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            stamp,
            tracebacks,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.contextvars.merge_contextvars,
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                stamp,
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                tracebacks,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric)


# --- dependencies and supervision (every role; docs/operations.md, Outages) ----------
DEPENDENCY_UP = Gauge(
    "intentd_dependency_up",
    "1 while the dependency answers this process, 0 during an outage"
    " (dependency: postgresql, kafka, rpc; chain: the rpc's chain)",
    ["dependency", "chain"],
)
DEPENDENCY_OUTAGE_SECONDS = Gauge(
    "intentd_dependency_outage_seconds",
    "How long the current outage of the dependency has lasted (0 while it answers)",
    ["dependency", "chain"],
)
DEPENDENCY_OUTAGES = Counter(
    "intentd_dependency_outages_total",
    "Outages of a dependency this process rode out or rides out",
    ["dependency", "chain"],
)
TASK_RESTARTS = Counter(
    "intentd_task_restarts_total",
    "Tasks of a role started again after a failure, by diagnosis (outage, transient)",
    ["task", "reason"],
)
TASK_STALLED = Gauge(
    "intentd_task_stalled",
    "1 while a task has made no progress for longer than its bound (the process is not ready)",
    ["task"],
)

# --- poller -------------------------------------------------------------------------
POLLER_BLOCK = Gauge("intentd_poller_block", "Last block processed", ["chain"])
BLOCKS_BEHIND = Gauge(
    "intentd_blocks_behind_head", "Confirmed head minus last processed block", ["chain"]
)
DEPOSITS_PUBLISHED = Counter(
    "intentd_deposits_published_total", "Deposits published to Kafka", ["chain"]
)
NATIVE_REFUSED = Counter(
    "intentd_native_value_refused_total",
    "Transactions with value to a watched address not credited (failed, or a type that"
    " does not pay its to)",
    ["chain", "tx_type"],
)
REORGS = Counter("intentd_reorgs_total", "Reorgs detected (rewinds)", ["chain"])
PREFILLS_UNCONFIRMED = Counter(
    "intentd_prefills_unconfirmed_total",
    "Prefill attempts held because the second provider did not confirm a deposit",
    ["chain"],
)
PREFILLS_UNCONFIRMED_OVERDUE = Counter(
    "intentd_prefills_unconfirmed_overdue_total",
    "Prefills whose deposits stayed unconfirmed by the second provider past the bound",
    ["chain"],
)
DEPOSITS_CONTRADICTED = Counter(
    "intentd_deposits_contradicted_total",
    "Credited deposits a second provider that has their block contradicts (a lying or"
    " broken primary provider); their prefill is held",
    ["chain"],
)
REORG_HOLDS_OVERDUE = Counter(
    "intentd_reorg_holds_overdue_total",
    "Deposits removed by a reorg, not undoable, and not back on chain within the bound",
    ["chain"],
)
RETRACTIONS = Counter(
    "intentd_retractions_published_total", "Deposits retracted after a deep reorg", ["chain"]
)
RPC_ERRORS = Counter("intentd_rpc_errors_total", "Failed RPC calls", ["chain", "method"])
RPC_FAILOVERS = Counter("intentd_rpc_failovers_total", "Switches to another RPC URL", ["chain"])
RPC_LOG_REFUSALS = Counter(
    "intentd_rpc_log_refusals_total",
    "eth_getLogs refused by a provider's range or size limit, by what the reader did"
    " (split: halved the range; alone: one range per request; from_receipts: read a"
    " one-block range from the block's receipts)",
    ["chain", "action"],
)
POLLER_READ_FAILURES = Counter(
    "intentd_poller_read_failures_total",
    "Poller reads that failed and are read again, by reason (unavailable: no usable"
    " answer after the RPC client's retries; inconsistent: answers that do not fit"
    " together or logs not proven whole; lagging: a walk-back node without our blocks)",
    ["chain", "reason"],
)
RPC_WRONG_CHAIN = Counter(
    "intentd_rpc_wrong_chain_total", "RPC URLs refused: eth_chainId is another chain", ["chain"]
)
WATCHED_ADDRESSES = Gauge("intentd_watched_addresses", "Intent addresses watched", ["chain"])
RECONCILED_ADDRESSES = Gauge(
    "intentd_reconciled_addresses",
    "Native-coin intent addresses balance-reconciled in the last batch",
    ["chain"],
)
RECONCILIATION = Counter(
    "intentd_balance_reconciliation_total",
    "Balance reconciliation findings: reconciled_deposit, unexplained_decrease, untraced",
    ["chain", "finding"],
)

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
DEAD_LETTERS = Counter(
    "intentd_dead_letters_total",
    "Messages sent to the DLQ, by origin topic and reason code (malformed, chain_mismatch,"
    " result_mismatch, transient:<Error>, error:<Error>)",
    ["topic", "reason"],
)
UNCREDIT_ALERTS = Counter(
    "intentd_reorg_alerts_total",
    "Retracted deposits that could not be un-credited (something irreversible happened)",
    ["chain"],
)
ACTION_ALERTS = Counter(
    "intentd_action_alerts_total", "Actions that failed for good (operator action needed)", ["kind"]
)
TRIGGER_DEPOSIT_CHECKS = Counter(
    "intentd_trigger_deposit_checks_total",
    "Checks of trigger-credited deposits against the canonical chain, by outcome"
    " (canonical, final, moved, waiting, retracted, retraction_alert, ...)",
    ["chain", "outcome"],
)
RETAINED = Counter(
    "intentd_retained_total",
    "Amounts below the token's min_sweep kept at intent addresses instead of refunded or swept",
    ["chain", "kind", "reason"],
)
EXPIRED = Counter("intentd_intents_expired_total", "PENDING intents expired", ["outcome"])
HANDLE_SECONDS = Histogram(
    "intentd_lifecycle_handle_seconds", "Time to apply one message batch", ["kind"]
)
# How long a payer and a recipient wait: the two steps of an intent an operator watches.
_FLOW_BUCKETS = (1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
DEPOSIT_TO_FUNDED = Histogram(
    "intentd_deposit_to_funded_seconds",
    "From the block time of the deposit that completes an intent's funding to FUNDED"
    " (confirmation depth and the pipeline), by the deposit's chain",
    ["chain"],
    buckets=_FLOW_BUCKETS,
)
FUNDED_TO_COMPLETED = Histogram(
    "intentd_funded_to_completed_seconds",
    "From FUNDED (the prefill action written) to COMPLETED (the prefill confirmed at depth),"
    " by the destination chain",
    ["chain"],
    buckets=_FLOW_BUCKETS,
)

KAFKA_OFFSET_OUT_OF_RANGE = Counter(
    "intentd_kafka_offset_out_of_range_total",
    "Times a consumer group's position was outside its partition's log (below the log"
    " start: retention deleted records it had not read), by topic and partition",
    ["topic", "partition"],
)
LOG_GAP_RECOVERIES = Counter(
    "intentd_log_gap_recoveries_total",
    "Gaps in a consumed log recovered from the source of truth, by topic and outcome"
    " (rescanned, replayed, unrecoverable, failed)",
    ["topic", "outcome"],
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
SETTLE_UNDECIDED = Counter(
    "intentd_settle_undecided_total",
    "Executor verdicts not taken for lack of proof: a node's view that disagrees with"
    " itself (view), or a nonce used at depth with no receipt of ours and no transaction"
    " found on it (nonce_unproven); nothing is signed on either",
    ["chain", "reason"],
)
NONCE_GAPS = Counter(
    "intentd_nonce_gaps_total",
    "Nonces below a signer's next nonce with no open transaction of ours (found at reconcile)",
    ["chain"],
)
EXECUTOR_ACTIVE = Gauge(
    "intentd_executor_active", "1 while this process leads the chain", ["chain"]
)

# --- API ----------------------------------------------------------------------------
# With ``intentd api --workers N`` every worker writes its values to files of a
# directory the parent process reads (prometheus_client's multiprocess mode, see
# ``api.workers``): counters and histograms add up over the workers.
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
API_REQUESTS = Counter(
    "intentd_api_requests_total",
    "API requests answered, by route template and status (route 'unmatched': no route)",
    ["method", "route", "status"],
)
API_SECONDS = Histogram(
    "intentd_api_request_seconds",
    "Time from a request's arrival to the end of its answer",
    ["method", "route"],
    buckets=_LATENCY_BUCKETS,
)
API_IN_FLIGHT = Gauge(
    "intentd_api_requests_in_flight",
    "API requests being answered",
    multiprocess_mode="livesum",
)
INTENTS_CREATED = Counter(
    "intentd_intents_created_total", "Intents created (API and CLI)", ["source_chain"]
)
INTENT_WRITE_SECONDS = Histogram(
    "intentd_intent_write_seconds",
    "One group commit of new intents: indexes drawn, addresses derived, insert committed",
    buckets=_LATENCY_BUCKETS,
)
INTENT_WRITE_BATCH = Histogram(
    "intentd_intent_write_batch_size",
    "New intents per group commit",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)

# webhooks (docs/webhooks.md, Operations)
WEBHOOK_DELIVERIES = Counter(
    "intentd_webhook_attempts_total",
    "Webhook attempts by outcome: delivered, retry, failed (no retry left), disabled",
    ["outcome"],
)
WEBHOOK_ATTEMPT_SECONDS = Histogram(
    "intentd_webhook_attempt_seconds",
    "One webhook attempt: sign, connect, send, read the capped answer",
    buckets=_LATENCY_BUCKETS,
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
