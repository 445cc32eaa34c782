"""What a library's exception means to a role: ride it out, or exit (2 or 1).

A transient failure is never read as a configuration error: only a definite refusal
(the database refusing the credentials or not existing, the brokers refusing the
client, a ConfigError) is one."""

from __future__ import annotations

import asyncpg
import pytest
from aiokafka import errors as kafka_errors

from intentd.adapters.diagnosis import diagnose
from intentd.adapters.evm.json_rpc import MissingResult, RpcError, RpcTransportError
from intentd.adapters.postgres.cursor_store import CursorConflict
from intentd.adapters.postgres.intent_store import ConcurrentUpdate
from intentd.adapters.postgres.lease import LeaseLost
from intentd.indexer.reorg import DeepReorgError
from intentd.settings import ConfigError
from intentd.supervision import KAFKA, POSTGRESQL, Kind, rpc
from intentd.supervision.tasks import diagnosis_of


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connect call failed"),
        ConnectionResetError(104, "Connection reset by peer"),
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        asyncpg.InterfaceError("cannot call Transaction.__aexit__(): the connection is closed"),
        asyncpg.CannotConnectNowError("the database system is starting up"),
        asyncpg.TooManyConnectionsError("sorry, too many clients already"),
        TimeoutError(),
        LeaseLost("the lock connection of BASE failed"),
    ],
)
def test_postgresql_not_answering_is_its_outage(error: BaseException) -> None:
    found = diagnose(error, chain="BASE")
    assert (found.kind, found.dependency) == (Kind.OUTAGE, POSTGRESQL)


@pytest.mark.parametrize(
    "error",
    [
        kafka_errors.KafkaConnectionError("Unable to bootstrap from [('127.0.0.1', 9092)]"),
        kafka_errors.KafkaTimeoutError(),
        kafka_errors.NodeNotReadyError("node 1"),
        kafka_errors.NotLeaderForPartitionError(),
        kafka_errors.CoordinatorNotAvailableError(),
        kafka_errors.KafkaError("Unable to get cluster metadata over all known brokers"),
    ],
)
def test_the_brokers_not_answering_are_their_outage(error: BaseException) -> None:
    found = diagnose(error)
    assert (found.kind, found.dependency) == (Kind.OUTAGE, KAFKA)


@pytest.mark.parametrize(
    "error",
    [
        RpcError("eth_getLogs", -32000, "header not found"),
        RpcError("eth_getLogs", -32005, "limit exceeded"),
        RpcTransportError("HTTP 503: b'busy'"),
        MissingResult("eth_getBlockByNumber answered null"),
    ],
)
def test_a_node_without_an_answer_is_its_chains_rpc_outage_never_a_config_error(
    error: BaseException,
) -> None:
    found = diagnose(error, chain="BASE")
    assert (found.kind, found.dependency) == (Kind.OUTAGE, rpc("BASE"))
    assert diagnose(error).kind is Kind.TRANSIENT  # a task of no one chain retries it


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.SerializationError("could not serialize access"),
        asyncpg.DeadlockDetectedError("deadlock detected"),
        ConcurrentUpdate("lost"),
        CursorConflict("another poller moved the cursor"),
    ],
)
def test_a_lost_race_is_transient(error: BaseException) -> None:
    assert diagnose(error, chain="BASE").kind is Kind.TRANSIENT


@pytest.mark.parametrize(
    ("error", "key"),
    [
        (asyncpg.InvalidPasswordError("password authentication failed for user"), "database.url"),
        (asyncpg.InvalidCatalogNameError('database "x" does not exist'), "database.url"),
        (kafka_errors.TopicAuthorizationFailedError(), "kafka"),
        (kafka_errors.SaslAuthenticationFailed(), "kafka"),
        (ConfigError("chains.BASE.tokens.0.decimals = 6: ..."), "chains.BASE.tokens.0"),
    ],
)
def test_a_definite_refusal_is_a_configuration_error_naming_the_key(
    error: BaseException, key: str
) -> None:
    found = diagnose(error)
    assert found.kind is Kind.CONFIGURATION
    assert found.message.startswith(key)


@pytest.mark.parametrize(
    "error", [KeyError("x"), ValueError("bad"), DeepReorgError("deeper than the window")]
)
def test_anything_else_is_a_bug(error: BaseException) -> None:
    assert diagnose(error, chain="BASE").kind is Kind.BUG


def test_a_group_is_its_worst_leaf() -> None:
    outage = ExceptionGroup("g", [ConnectionResetError(), kafka_errors.KafkaTimeoutError()])
    assert diagnosis_of(diagnose, outage).dependency == POSTGRESQL
    bug = ExceptionGroup("g", [ConnectionResetError(), ExceptionGroup("h", [KeyError("x")])])
    assert diagnosis_of(diagnose, bug).kind is Kind.BUG
    config = ExceptionGroup("g", [asyncpg.InvalidPasswordError("no"), TimeoutError()])
    assert diagnosis_of(diagnose, config).kind is Kind.CONFIGURATION
