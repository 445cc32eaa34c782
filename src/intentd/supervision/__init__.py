"""Riding out dependency outages: every role's tasks under one supervisor.

- :mod:`~intentd.supervision.dependencies`: the dependencies (PostgreSQL, Kafka, a
  chain's RPC) and what a failure means (outage, transient, configuration, bug);
- :mod:`~intentd.supervision.outage_log`: the few lines an outage is told in;
- :mod:`~intentd.supervision.cadence`: how closely a dependency is probed;
- :mod:`~intentd.supervision.health`: which dependencies answer (probes), which tasks
  progress, and readiness;
- :mod:`~intentd.supervision.tasks`: :func:`supervise` (wait, back off, start again;
  exit only on a configuration error or a bug), :func:`progress`, :func:`report`.

docs/operations.md, *Outages*, says what each role does when a dependency goes away.
"""

from intentd.supervision.cadence import Cadence
from intentd.supervision.dependencies import (
    KAFKA,
    POSTGRESQL,
    Dependency,
    Diagnose,
    Diagnosis,
    Kind,
    rpc,
)
from intentd.supervision.health import Health
from intentd.supervision.tasks import answered, progress, report, supervise, until_done

__all__ = [
    "KAFKA",
    "POSTGRESQL",
    "Cadence",
    "Dependency",
    "Diagnose",
    "Diagnosis",
    "Health",
    "Kind",
    "answered",
    "progress",
    "report",
    "rpc",
    "supervise",
    "until_done",
]
