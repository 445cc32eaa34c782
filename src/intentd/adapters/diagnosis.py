"""What the libraries' exceptions mean to a role: :func:`diagnose`, for ``supervision``.

- **outage of PostgreSQL**: what ``adapters.postgres.db_failures`` calls unavailable (refused,
  reset, closed, too many connections, starting up or shutting down, no answer in
  time), and a lost lease (its connection failed);
- **outage of Kafka**: any ``aiokafka`` error but an authorization or authentication
  refusal (no broker reachable, no leader, a request timed out, the coordinator gone);
- **outage of the chain's RPC**: no usable answer from its nodes
  (:class:`~intentd.chain.errors.ChainUnavailable`; the poller reads again by itself,
  ``indexer.read_failures``, but a failure at its start reaches its supervisor); for a
  task that serves no one chain (the lifecycle's verifier), a transient failure;
- **transient**: a transaction that lost to another (serialization, deadlock, lock or
  statement timeout, a compare-and-set that lost), a cursor another poller moved (the
  poller starts over: it takes the chain's lease again or waits as a standby);
- **configuration**: :class:`~intentd.settings.ConfigError`, the database refusing the
  credentials or not existing (``database.url``), Kafka refusing them (``kafka.*``);
- **bug**: anything else (a deep reorg, which needs an operator, included).
"""

from __future__ import annotations

import asyncpg
from aiokafka import errors as kafka_errors

from intentd.adapters.postgres.cursor_store import CursorConflict
from intentd.adapters.postgres.db_failures import classify as classify_database
from intentd.adapters.postgres.lease import LeaseLost
from intentd.chain.errors import ChainUnavailable
from intentd.lifecycle.failures import Failure
from intentd.settings import ConfigError
from intentd.supervision import KAFKA, POSTGRESQL, Diagnosis, rpc
from intentd.supervision.dependencies import BUG, TRANSIENT

__all__ = ["diagnose", "diagnose_for"]

_KAFKA_REFUSALS: tuple[type[BaseException], ...] = (
    kafka_errors.AuthenticationFailedError,
    kafka_errors.AuthenticationMethodNotSupported,
    kafka_errors.ClusterAuthorizationFailedError,
    kafka_errors.GroupAuthorizationFailedError,
    kafka_errors.SaslAuthenticationFailed,
    kafka_errors.TopicAuthorizationFailedError,
    kafka_errors.UnsupportedSaslMechanismError,
)


def diagnose(error: BaseException, *, chain: str | None = None) -> Diagnosis:
    """What ``error`` means for a task (of ``chain``'s poller or executor, if given)."""
    if isinstance(error, ConfigError):
        return Diagnosis.configuration(str(error))
    if isinstance(error, asyncpg.InvalidAuthorizationSpecificationError):
        return Diagnosis.configuration(f"database.url: the server refuses it: {error}")
    if isinstance(error, asyncpg.InvalidCatalogNameError):
        return Diagnosis.configuration(f"database.url: {error}")
    if isinstance(error, _KAFKA_REFUSALS):
        return Diagnosis.configuration(f"kafka: the brokers refuse this client: {error!r}")
    if isinstance(error, kafka_errors.KafkaError):
        return Diagnosis.outage(KAFKA)
    if isinstance(error, ChainUnavailable):
        return Diagnosis.outage(rpc(chain)) if chain is not None else TRANSIENT
    if isinstance(error, LeaseLost):
        return Diagnosis.outage(POSTGRESQL)
    if isinstance(error, CursorConflict):
        return TRANSIENT
    match classify_database(error):
        case Failure.UNAVAILABLE:
            return Diagnosis.outage(POSTGRESQL)
        case Failure.CONTENTION:
            return TRANSIENT
    return BUG


def diagnose_for(chain: str | None) -> _Diagnose:
    """:func:`diagnose` for the tasks of ``chain`` (None: of no one chain)."""
    return _Diagnose(chain)


class _Diagnose:
    def __init__(self, chain: str | None) -> None:
        self._chain = chain

    def __call__(self, error: BaseException) -> Diagnosis:
        return diagnose(error, chain=self._chain)
