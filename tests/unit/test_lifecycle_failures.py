"""Which message failures are retried, which dead-lettered at once, and the chain checks."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
import pytest

from intentd.adapters.postgres.db_failures import classify
from intentd.adapters.postgres.intent_store import ConcurrentUpdate
from intentd.lifecycle.admission import chain_of_topic, refusal, result_refusal
from intentd.lifecycle.failures import Failure, backoff, reason, reason_code
from intentd.lifecycle.ports import ActionFacts
from intentd.messages import ActionResultMessage, DepositMessage, RetractionMessage
from intentd.settings import ChainConfig

H = "0x" + "a" * 64
A = "0x" + "b" * 40


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (asyncpg.SerializationError("x"), Failure.CONTENTION),
        (asyncpg.DeadlockDetectedError("x"), Failure.CONTENTION),
        (asyncpg.LockNotAvailableError("x"), Failure.CONTENTION),
        (asyncpg.QueryCanceledError("x"), Failure.CONTENTION),
        (ConcurrentUpdate("x"), Failure.CONTENTION),
        (asyncpg.ConnectionDoesNotExistError("x"), Failure.UNAVAILABLE),
        (asyncpg.CannotConnectNowError("x"), Failure.UNAVAILABLE),
        (asyncpg.AdminShutdownError("x"), Failure.UNAVAILABLE),
        (asyncpg.TooManyConnectionsError("x"), Failure.UNAVAILABLE),
        (asyncpg.InterfaceError("connection is closed"), Failure.UNAVAILABLE),
        (ConnectionRefusedError(), Failure.UNAVAILABLE),
        (TimeoutError(), Failure.UNAVAILABLE),
        (KeyError("BASE"), Failure.PERMANENT),
        (ValueError("x"), Failure.PERMANENT),
        (asyncpg.UniqueViolationError("x"), Failure.PERMANENT),
        (AssertionError(), Failure.PERMANENT),
    ],
)
def test_classification(exc: BaseException, expected: Failure) -> None:
    assert classify(exc) is expected


def test_reasons_and_their_bounded_codes() -> None:
    assert reason(Failure.PERMANENT, KeyError("X")) == "error:KeyError: 'X'"
    assert reason_code("error:KeyError: 'X'") == "error:KeyError"
    assert reason_code("chain_mismatch: deposit x says chain 'A'") == "chain_mismatch"
    assert reason_code("malformed chain message: amount: bad") == "malformed"


@pytest.mark.parametrize(
    ("attempt", "seconds"), [(1, 0.05), (2, 0.1), (3, 0.2), (7, 3.2), (8, 5.0), (200, 5.0)]
)
def test_backoff(attempt: int, seconds: float) -> None:
    assert backoff(attempt, base=0.05) == pytest.approx(seconds)


def test_backoff_counts_from_one() -> None:
    with pytest.raises(ValueError, match="from 1"):
        backoff(0, base=1)


CHAINS = {
    "BASE": ChainConfig.model_validate(
        {"name": "BASE", "chain_id": 8453, "network": "main", "rpc_urls": ["http://127.0.0.1:1"]}
    )
}


def deposit(chain: str = "BASE", chain_id: int = 8453) -> DepositMessage:
    return DepositMessage(
        id="d", chain=chain, chain_id=chain_id, tx_hash=H, log_index=0, block_number=1,
        block_hash=H, block_time=int(datetime.now(UTC).timestamp()), token=A,
        from_address=A, to_address=A, amount=1,
    )  # fmt: skip


def retraction(chain: str = "BASE") -> RetractionMessage:
    return RetractionMessage(
        id="d", chain=chain, tx_hash=H, log_index=0, block_number=1, block_hash=H, to_address=A
    )


def test_topic_chain() -> None:
    assert chain_of_topic("p.deposits.BASE", "p") == "BASE"
    assert chain_of_topic("p.deposits.", "p") is None
    assert chain_of_topic("q.deposits.BASE", "p") is None
    assert chain_of_topic("p.action-results", "p") is None


@pytest.mark.parametrize(
    ("message", "topic", "refused"),
    [
        (deposit(), "p.deposits.BASE", None),
        (retraction(), "p.deposits.BASE", None),
        (deposit(), "p.deposits.ARBITRUM", "says chain 'BASE' on the topic of 'ARBITRUM'"),
        (retraction(), "p.deposits.ARBITRUM", "says chain 'BASE' on the topic of 'ARBITRUM'"),
        (deposit("ARBITRUM"), "p.deposits.ARBITRUM", "'ARBITRUM' is not configured"),
        (deposit(chain_id=1), "p.deposits.BASE", "chain_id 1; BASE is configured as 8453"),
        (deposit(), "p.dlq", "not a deposits topic"),
    ],
)
def test_chain_messages_must_match_topic_and_config(
    message: DepositMessage | RetractionMessage, topic: str, refused: str | None
) -> None:
    found = refusal(message, topic, "p", CHAINS)
    if refused is None:
        assert found is None
    else:
        assert found is not None and found.startswith("chain_mismatch: ") and refused in found


TX, OTHER_TX = "0x" + "e" * 64, "0x" + "f" * 64


def facts(**changes: object) -> ActionFacts:
    fields: dict[str, object] = {
        "intent_id": 4, "kind": "prefill", "chain": "BASE", "status": "submitted",
        "tx_hash": None, "amount_sent": None, "gas_cost": None, "transfer_sent": True,
    }  # fmt: skip
    fields.update(changes)
    return ActionFacts(**fields)  # type: ignore[arg-type]


def result(event: str, **changes: object) -> ActionResultMessage:
    fields: dict[str, object] = {
        "id": f"action:9:{event}", "action_id": 9, "intent_id": 4, "action_kind": "prefill",
        "event": event, "chain": "BASE",
    }  # fmt: skip
    if event != "failed":
        fields["tx_hash"] = TX
    if event == "confirmed":
        fields.update(block_number=3, amount_sent=100, gas_cost=7)
    fields.update(changes)
    return ActionResultMessage.model_validate(fields)


CONFIRMED = {"status": "confirmed", "tx_hash": TX, "amount_sent": 100, "gas_cost": 7}


@pytest.mark.parametrize(
    ("message", "recorded", "refused"),
    [
        (result("sent"), facts(), None),
        (result("confirmed"), facts(**CONFIRMED), None),
        (result("failed"), facts(status="failed", transfer_sent=False), None),
        (result("sent"), None, "does not exist"),
        (result("sent", intent_id=5), facts(), "(intent, kind, chain)"),
        (result("sent", action_kind="user_refund"), facts(), "(intent, kind, chain)"),
        (result("sent", chain="ARB"), facts(), "(intent, kind, chain)"),
        (result("sent"), facts(transfer_sent=False), "no sent transfer"),
        (result("sent", tx_hash=None), facts(), "no sent transfer"),
        (result("confirmed"), facts(), "recorded as ('submitted'"),
        (result("confirmed", tx_hash=OTHER_TX), facts(**CONFIRMED), "recorded as"),
        (result("confirmed", amount_sent=101), facts(**CONFIRMED), "recorded as"),
        (result("confirmed", gas_cost=0), facts(**CONFIRMED), "recorded as"),
        (result("failed"), facts(), "is submitted, not failed"),
        (result("failed"), facts(**CONFIRMED), "is confirmed, not failed"),
    ],
)
def test_action_results_must_agree_with_the_executors_record(
    message: ActionResultMessage, recorded: ActionFacts | None, refused: str | None
) -> None:
    found = result_refusal(message, recorded)
    if refused is None:
        assert found is None
    else:
        assert found is not None and found.startswith("result_mismatch: ") and refused in found
