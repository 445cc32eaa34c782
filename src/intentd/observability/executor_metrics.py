"""What the executors report: actions and transactions, nonces, the relayer's float
(docs/execution.md).

Each metric is defined here once; :mod:`intentd.observability` exports them all.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

__all__ = [
    "ACTION_OUTCOMES",
    "CHAIN_TRANSACTIONS",
    "EXECUTOR_ACTIVE",
    "FLOAT_READ_AT",
    "GAS_TANK_ALERT_BELOW",
    "GAS_TANK_BALANCE",
    "NONCE_GAPS",
    "PREFILLS_SHORT",
    "RELAYER_BALANCE",
    "RELAYER_FREE",
    "RELAYER_FREE_ALERT_BELOW",
    "RELAYER_OWED",
    "RELAYER_PENDING",
    "RELAYER_RESERVED",
    "REPAYMENTS_OVERDUE",
    "SEND_REFUSALS",
    "SETTLE_UNDECIDED",
]

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

# --- the relayer's float (executor; docs/execution.md, "The relayer's float") --------
# Whole token units (floats, for dashboards and alerts; the money is in relayer_float).
RELAYER_BALANCE = Gauge(
    "intentd_relayer_balance", "The relayer's balance at the last reading", ["chain", "token"]
)
RELAYER_RESERVED = Gauge(
    "intentd_relayer_reserved",
    "Prefills ready or in flight that will take from the relayer's balance",
    ["chain", "token"],
)
RELAYER_FREE = Gauge(
    "intentd_relayer_free", "The relayer's balance less what is reserved", ["chain", "token"]
)
RELAYER_OWED = Gauge(
    "intentd_relayer_owed",
    "Repayments to the relayer not yet confirmed (landing on this chain and token)",
    ["chain", "token"],
)
RELAYER_PENDING = Gauge(
    "intentd_relayer_pending",
    "What PENDING intents will ask of the relayer here once paid",
    ["chain", "token"],
)
RELAYER_FREE_ALERT_BELOW = Gauge(
    "intentd_relayer_free_alert_below",
    "The token's float_alert_below (config): alert while intentd_relayer_free is under it",
    ["chain", "token"],
)
REPAYMENTS_OVERDUE = Gauge(
    "intentd_relayer_repayments_overdue",
    "Repayments to the relayer unconfirmed for longer than liquidity.repayment_overdue_after",
    ["chain", "token"],
)
GAS_TANK_BALANCE = Gauge(
    "intentd_gas_tank_balance", "The gas tank's native balance at the last reading", ["chain"]
)
GAS_TANK_ALERT_BELOW = Gauge(
    "intentd_gas_tank_alert_below",
    "The chain's gas_tank_alert_below (config): alert while the gas tank is under it",
    ["chain"],
)
FLOAT_READ_AT = Gauge(
    "intentd_relayer_float_read_timestamp_seconds",
    "When the relayer's float of the chain was last read and stored (Unix time)",
    ["chain"],
)
PREFILLS_SHORT = Counter(
    "intentd_prefills_short_total",
    "Looks at a prefill that found the relayer short of the token (the prefill waits)",
    ["chain", "token"],
)
