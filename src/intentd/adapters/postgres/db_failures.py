"""What a database error means to the lifecycle: asyncpg's exceptions (and our own
compare-and-set's) mapped to :class:`~intentd.lifecycle.failures.Failure`.

- :attr:`Failure.UNAVAILABLE`: the database could not be reached or went away
  (connection refused, reset or closed, too many connections, the server starting up
  or shutting down, a timeout waiting for a connection or an answer);
- :attr:`Failure.CONTENTION`: the transaction lost to another one (serialization
  failure, deadlock, lock timeout, statement timeout,
  :class:`~intentd.adapters.postgres.intent_store.ConcurrentUpdate`);
- :attr:`Failure.PERMANENT`: anything else.

:meth:`intentd.adapters.postgres.lifecycle_uow.PostgresStore.classify` answers with it;
:func:`unavailable` is the API's question (``api.connections``).
"""

from __future__ import annotations

import asyncpg

from intentd.adapters.postgres.intent_store import ConcurrentUpdate
from intentd.lifecycle.failures import Failure

__all__ = ["classify", "unavailable"]

_UNAVAILABLE: tuple[type[BaseException], ...] = (
    asyncpg.PostgresConnectionError,  # connection failure, connection does not exist
    asyncpg.TooManyConnectionsError,
    asyncpg.CannotConnectNowError,  # starting up
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.InterfaceError,  # "connection is closed" and its kin
    OSError,  # refused, reset, unreachable
    TimeoutError,  # no pool connection in time, or no answer in time
)
_CONTENTION: tuple[type[BaseException], ...] = (
    asyncpg.TransactionRollbackError,  # serialization failure, deadlock
    asyncpg.LockNotAvailableError,  # lock_timeout
    asyncpg.QueryCanceledError,  # statement_timeout
    ConcurrentUpdate,
)


def classify(exc: BaseException) -> Failure:
    """The class of an exception raised while working on the database."""
    if isinstance(exc, _CONTENTION):
        return Failure.CONTENTION
    if isinstance(exc, _UNAVAILABLE):
        return Failure.UNAVAILABLE
    return Failure.PERMANENT


def unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the database could not be reached, went away or did not
    answer in time (:attr:`Failure.UNAVAILABLE`; the API answers it 503)."""
    return classify(exc) is Failure.UNAVAILABLE
