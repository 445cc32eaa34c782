"""How the lifecycle treats an exception raised while applying one message (pure).

Every exception falls in one of three classes:

- :attr:`Failure.UNAVAILABLE`: the database could not be reached or went away
  (connection refused, reset or closed, too many connections, the server starting up
  or shutting down, a timeout waiting for a connection or an answer). Retried with
  backoff; if it persists, the consumer asks the database (``SELECT 1``): while that
  fails too, the database is down, which is no fault of the message, so the consumer
  waits for it (the message is not dead-lettered, nothing after it is applied or
  committed); once the database answers, the message gets a fresh round of attempts.
- :attr:`Failure.CONTENTION`: the transaction lost to another one (serialization
  failure, deadlock, lock timeout, statement timeout, our own compare-and-set
  :class:`~intentd.adapters.intent_store.ConcurrentUpdate`). Retried with backoff; if
  it persists after :data:`ATTEMPTS` attempts, the message goes to the dead-letter
  topic with reason ``transient:<error>``.
- :attr:`Failure.PERMANENT`: anything else (the message contradicts the store, a
  configuration lookup fails, a bug). Not retried: the message goes to the
  dead-letter topic at once with reason ``error:<error>``. Retrying would only
  repeat it, and stopping the consumer would stop every intent behind it.
"""

from __future__ import annotations

from enum import StrEnum

import asyncpg

from intentd.adapters.intent_store import ConcurrentUpdate
from intentd.backoff import Backoff

__all__ = ["ATTEMPTS", "Failure", "backoff", "classify", "reason", "reason_code"]

ATTEMPTS = 8
"""Attempts per message before a contention error sends it to the dead-letter topic."""


class Failure(StrEnum):
    UNAVAILABLE = "unavailable"
    """The database is unreachable or went away: retry, then wait for it."""
    CONTENTION = "transient"
    """Lost to a concurrent transaction: retry, then dead-letter."""
    PERMANENT = "error"
    """Anything else: dead-letter at once."""


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
    """The class of an exception raised while applying a message."""
    if isinstance(exc, _CONTENTION):
        return Failure.CONTENTION
    if isinstance(exc, _UNAVAILABLE):
        return Failure.UNAVAILABLE
    return Failure.PERMANENT


def reason(failure: Failure, exc: BaseException) -> str:
    """The dead-letter reason: ``<class>:<ExceptionType>: <message>``.

    The part before the first space is short and bounded (a metric label); the rest
    says what happened.
    """
    return f"{failure.value}:{type(exc).__name__}: {exc}"


def reason_code(reason: str) -> str:
    """The bounded head of a dead-letter reason (its first word, without a colon):
    ``chain_mismatch``, ``malformed``, ``error:KeyError``, ``transient:DeadlockDetectedError``."""
    return reason.split(" ", 1)[0].rstrip(":")


def backoff(attempt: int, *, base: float, cap: float = 5.0) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based): ``base * 2**(attempt-1)``,
    at most ``cap``."""
    return Backoff(base, cap=cap).delay(attempt)
