"""What the pollers report: blocks, deposits, reorgs, RPC failures, reconciliation.

Each metric is defined here once; :mod:`intentd.observability` exports them all.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

__all__ = [
    "BLOCKS_BEHIND",
    "DEPOSITS_CONTRADICTED",
    "DEPOSITS_PUBLISHED",
    "NATIVE_REFUSED",
    "POLLER_BLOCK",
    "POLLER_READ_FAILURES",
    "PREFILLS_UNCONFIRMED",
    "PREFILLS_UNCONFIRMED_OVERDUE",
    "RECONCILED_ADDRESSES",
    "RECONCILIATION",
    "REORGS",
    "REORG_HOLDS_OVERDUE",
    "RETRACTIONS",
    "RPC_ERRORS",
    "RPC_FAILOVERS",
    "RPC_LOG_REFUSALS",
    "RPC_WRONG_CHAIN",
    "WATCHED_ADDRESSES",
]

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
