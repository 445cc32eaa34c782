"""What every role reports of its dependencies and its tasks (docs/operations.md, *Outages*).

Each metric is defined here once; :mod:`intentd.observability` exports them all.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

__all__ = [
    "DEPENDENCY_OUTAGES",
    "DEPENDENCY_OUTAGE_SECONDS",
    "DEPENDENCY_UP",
    "TASK_RESTARTS",
    "TASK_STALLED",
]

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
