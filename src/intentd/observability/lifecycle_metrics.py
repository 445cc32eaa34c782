"""What the lifecycle reports: messages, transitions, alerts, the payer's and the
recipient's waits, the outbox.

Each metric is defined here once; :mod:`intentd.observability` exports them all.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "ACTION_ALERTS",
    "DEAD_LETTERS",
    "DEPOSITS",
    "DEPOSIT_TO_FUNDED",
    "EXPIRED",
    "FUNDED_TO_COMPLETED",
    "HANDLE_SECONDS",
    "KAFKA_OFFSET_OUT_OF_RANGE",
    "LOG_GAP_RECOVERIES",
    "MESSAGES",
    "OUTBOX_BACKLOG",
    "OUTBOX_PUBLISHED",
    "RETAINED",
    "TRANSITIONS",
    "TRIGGER_DEPOSIT_CHECKS",
    "UNCREDIT_ALERTS",
]

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
