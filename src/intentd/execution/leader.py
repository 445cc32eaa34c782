"""The executor's lease under the names the executor's tests know it by.

The executor takes its lease as a port (``execution.ports.Lease``); the adapter is
``adapters.executor_lease.ExecutorLease``, whose :meth:`check` raises
:class:`LeadershipLost` (``adapters.lease.LeaseLost``). This module goes once its
importers name those (issue 9).
"""

from intentd.adapters.executor_lease import ExecutorLease
from intentd.adapters.lease import LeaseLost as LeadershipLost

__all__ = ["ExecutorLease", "LeadershipLost"]
