"""Logging setup and every Prometheus metric, defined once.

Logs are structlog JSON lines on stderr (:mod:`~intentd.observability.logs`). The
metrics are defined by role, each once, in ``process_metrics`` (every role's
dependencies and tasks), ``poller_metrics``, ``lifecycle_metrics``, ``executor_metrics``,
``api_metrics``, ``webhook_metrics`` and ``price_metrics``; this module exports them all,
so callers write ``from intentd import observability as metrics`` and ``metrics.NAME``.
"""

from __future__ import annotations

from intentd.observability import (
    api_metrics,
    executor_metrics,
    lifecycle_metrics,
    logs,
    poller_metrics,
    price_metrics,
    process_metrics,
    webhook_metrics,
)
from intentd.observability.api_metrics import *  # noqa: F403
from intentd.observability.executor_metrics import *  # noqa: F403
from intentd.observability.lifecycle_metrics import *  # noqa: F403
from intentd.observability.logs import *  # noqa: F403
from intentd.observability.poller_metrics import *  # noqa: F403
from intentd.observability.price_metrics import *  # noqa: F403
from intentd.observability.process_metrics import *  # noqa: F403
from intentd.observability.webhook_metrics import *  # noqa: F403

__all__: list[str] = []
__all__ += logs.__all__
__all__ += process_metrics.__all__
__all__ += poller_metrics.__all__
__all__ += lifecycle_metrics.__all__
__all__ += executor_metrics.__all__
__all__ += api_metrics.__all__
__all__ += webhook_metrics.__all__
__all__ += price_metrics.__all__
