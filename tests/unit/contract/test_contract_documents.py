"""The AsyncAPI document is the code's, and what the code builds matches it.

The committed docs/asyncapi.json is what ``make asyncapi`` writes; every shape the code
builds (the envelope of every event type, the intent record, the deposit, retraction
and action-result messages) passes the closed check the e2e tests apply
(``intentd_dev.contract_check``), and a field the contract does not list fails it.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from tests.support import TopicReader
from tests.unit.contract.contract_samples import (
    ROW,
    action_results,
    deposit_message,
    envelopes,
    record,
)

from intentd.contract.asyncapi import document
from intentd.contract.events import ENVELOPE_FIELDS, EventRecord, EventType
from intentd.contract.formats import document_bytes
from intentd.contract.record import IntentRecord
from intentd.indexer.publishing import retraction_message
from intentd.indexer.reorg import PublishedDeposit
from intentd.messages import decode_action_result, decode_chain_message, encode
from intentd_dev.contract_check import ContractViolation, check, check_event, check_topic_value

COMMITTED = Path(__file__).resolve().parents[3] / "docs" / "asyncapi.json"


def test_the_committed_document_is_the_generated_one() -> None:
    assert document_bytes(document()).decode() == COMMITTED.read_text(), (
        "docs/asyncapi.json differs from the code: regenerate it with `make asyncapi`"
        " (python -m intentd.contract.asyncapi_dump) and commit it"
    )


def test_it_is_an_asyncapi_3_document_whose_references_resolve() -> None:
    doc = document()
    assert doc["asyncapi"].startswith("3.")
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc)
    assert len(refs) > 20
    for ref in refs:
        target: Any = doc
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        assert isinstance(target, dict), ref
    assert set(doc["channels"]) == {"deposits", "actionResults", "intentEvents"}
    for operation in doc["operations"].values():
        assert operation["action"] in ("send", "receive")


def test_the_envelope_of_every_event_type_matches_the_document() -> None:
    built = envelopes()
    assert {e["type"] for e in built} == {t.value for t in EventType}
    for body in built:
        check("intentEvent", orjson.loads(orjson.dumps(body)))
        check_topic_value("p.intent-events", orjson.dumps(body))
        assert tuple(body) == ENVELOPE_FIELDS


def test_render_record_writes_the_fields_of_intent_record_in_order() -> None:
    assert tuple(record()) == tuple(IntentRecord.__annotations__)


def test_the_event_log_model_shows_the_envelope_fields() -> None:
    assert tuple(EventRecord.model_fields) == ENVELOPE_FIELDS


def test_deposits_retractions_and_action_results_match_the_document() -> None:
    deposit = deposit_message()
    assert decode_chain_message(deposit).amount == 10**24
    check_topic_value("p.deposits.SRC", deposit)
    published = PublishedDeposit(12, "0x" + "c" * 64, "0x" + "1" * 64, 3, ROW.intent_address,
                                 "0x" + "a" * 40, 0, 5)  # fmt: skip
    check_topic_value("p.deposits.SRC", encode(retraction_message("SRC", published)))
    for value in action_results():
        decode_action_result(value)
        check_topic_value("p.action-results", value)


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (lambda e: e.update(extra=1), "Additional properties"),
        (lambda e: e["data"].update(surprise={}), "Additional properties"),
        (lambda e: e["intent"].update(intent_status="LOST"), "is not one of"),
        (lambda e: e.update(sequence="1"), "is not of type 'integer'"),
        (lambda e: e.update(type="intent_lost"), "is not one of"),
        (lambda e: e.pop("mode"), "'mode' is a required property"),
    ],
)
def test_an_envelope_the_contract_does_not_describe_fails_the_check(
    change: Any, complaint: str
) -> None:
    body: dict[str, Any] = orjson.loads(orjson.dumps(envelopes()[0]))
    change(body)
    with pytest.raises(ContractViolation, match=complaint):
        check_event(body)


def test_amounts_on_the_deposits_topic_are_decimal_strings() -> None:
    message = orjson.loads(deposit_message())
    message["amount"] = int(message["amount"])
    with pytest.raises(ContractViolation, match="is not of type 'string'"):
        check("deposit", message)
    with pytest.raises(ContractViolation, match="not a JSON object"):
        check_topic_value("p.action-results", b"[1]")
    check_topic_value("p.dlq", b"[1]")  # not in the contract


def test_the_webhook_test_ping_is_not_checked_as_an_intent_event() -> None:
    check_event({"type": "webhook_test", "intent": None, "data": {"endpoint_id": "x"}})


async def test_the_tests_topic_reader_checks_every_record_it_reads() -> None:
    good = SimpleNamespace(value=orjson.dumps(envelopes()[0]))
    bad = SimpleNamespace(value=orjson.dumps({**envelopes()[0], "extra": 1}))
    reader = TopicReader("127.0.0.1:1", "p.intent-events")
    unchecked = TopicReader("127.0.0.1:1", "p.intent-events", contract=False)
    try:
        reader._take([good])
        with pytest.raises(ContractViolation, match="Additional properties"):
            reader._take([bad])
        assert reader.messages == [good]
        unchecked._take([bad])
        assert unchecked.messages == [bad]
    finally:
        await reader.__aexit__()  # never started: closes the consumer
        await unchecked.__aexit__()
