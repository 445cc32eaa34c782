"""How the lifecycle treats an exception raised while applying one message (pure).

Every exception falls in one of three classes (:class:`Failure`); which class a
database error is in, the store says (:meth:`intentd.lifecycle.ports.Store.classify`,
on PostgreSQL ``adapters.postgres.db_failures``):

- :attr:`Failure.UNAVAILABLE`: the database could not be reached or went away.
  Retried with backoff; if it persists, the consumer asks the database
  (``SELECT 1``): while that fails too, the database is down, which is no fault of
  the message, so the consumer waits for it (the message is not dead-lettered,
  nothing after it is applied or committed); once the database answers, the message
  gets a fresh round of attempts.
- :attr:`Failure.CONTENTION`: the transaction lost to another one (serialization
  failure, deadlock, lock or statement timeout, a compare-and-set that lost).
  Retried with backoff; if it persists after :data:`ATTEMPTS` attempts, the message
  goes to the dead-letter topic with reason ``transient:<error>``.
- :attr:`Failure.PERMANENT`: anything else (the message contradicts the store, a
  configuration lookup fails, a bug). Not retried: the message goes to the
  dead-letter topic at once with reason ``error:<error>``. Retrying would only
  repeat it, and stopping the consumer would stop every intent behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from intentd.backoff import Backoff

__all__ = ["ATTEMPTS", "Classify", "Failure", "backoff", "reason", "reason_code"]

ATTEMPTS = 8
"""Attempts per message before a contention error sends it to the dead-letter topic."""


class Failure(StrEnum):
    UNAVAILABLE = "unavailable"
    """The database is unreachable or went away: retry, then wait for it."""
    CONTENTION = "transient"
    """Lost to a concurrent transaction: retry, then dead-letter."""
    PERMANENT = "error"
    """Anything else: dead-letter at once."""


Classify = Callable[[BaseException], Failure]
"""What a failure means (``Store.classify``)."""


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
