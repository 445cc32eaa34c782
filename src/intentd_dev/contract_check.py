"""Checks what the tests see on Kafka and in webhooks against the AsyncAPI document.

The document (``intentd.contract.asyncapi``, committed as docs/asyncapi.json and kept
equal to it by a test) is what the topics' consumers are told. The tests' Kafka reader
(``tests.support.TopicReader``), the demo's webhook check and the chaos run's event
check pass every message they read through :func:`check_topic_value` or
:func:`check_event`, so a field the code sends and the document does not describe, or
a value of another shape, fails the test that saw it.

The check is stricter than the document: every object schema is closed
(``additionalProperties: false`` unless the schema says otherwise). Consumers must
ignore fields they do not know, but intentd itself must not send one its contract
does not list. Development tooling: needs ``jsonschema`` (a dev dependency).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from typing import Any

import orjson
from jsonschema import Draft202012Validator

from intentd.contract.asyncapi import MESSAGES, document
from intentd.contract.events import TEST_EVENT_TYPE

__all__ = ["ContractViolation", "check", "check_event", "check_topic_value", "message_of"]


class ContractViolation(AssertionError):
    """A message that does not match its schema in the AsyncAPI document."""


def _closed(schema: Any) -> Any:
    """``schema`` with every object that lists its properties closed to others."""
    if isinstance(schema, dict):
        found = {key: _closed(value) for key, value in schema.items()}
        if "properties" in found and "additionalProperties" not in found:
            found["additionalProperties"] = False
        return found
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


@cache
def _validator(message: str) -> Draft202012Validator:
    doc = document()
    payload = doc["components"]["messages"][message]["payload"]
    schemas = _closed(copy.deepcopy(doc["components"]["schemas"]))
    return Draft202012Validator({"$ref": payload["$ref"], "components": {"schemas": schemas}})


def check(message: str, value: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """``value`` (JSON bytes or parsed) as the document's ``message`` (a key of
    ``MESSAGES``); raise :class:`ContractViolation` naming every mismatch."""
    if message not in MESSAGES:
        raise ValueError(f"no message {message!r} in the AsyncAPI document")
    data: Any = orjson.loads(value) if isinstance(value, bytes) else dict(value)
    errors = sorted(_validator(message).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        found = "; ".join(
            f"{'/'.join(str(p) for p in e.absolute_path) or '(message)'}: {e.message}"
            for e in errors[:5]
        )
        raise ContractViolation(
            f"a {message} message does not match docs/asyncapi.json: {found}\nmessage: {data!r}"
        )
    checked: dict[str, Any] = data
    return checked


def message_of(topic: str, data: Mapping[str, Any]) -> str | None:
    """The document's message a value of ``topic`` is, or None for a topic it does not
    describe (the dead-letter queue, a test's own topic)."""
    if topic.endswith(".intent-events"):
        return "intentEvent"
    if topic.endswith(".action-results"):
        return "actionResult"
    if ".deposits." in topic:
        return "retraction" if data.get("kind") == "retraction" else "deposit"
    return None


def check_topic_value(topic: str, value: bytes) -> None:
    """Check one Kafka record's value read from ``topic`` (a topic the document does not
    describe is not checked)."""
    data = orjson.loads(value)
    if not isinstance(data, dict):
        if message_of(topic, {}) is not None:
            raise ContractViolation(f"a record of {topic} is not a JSON object: {value!r}")
        return
    message = message_of(topic, data)
    if message is not None:
        check(message, data)


def check_event(body: bytes | str | Mapping[str, Any]) -> None:
    """Check an event as the event log stores it or a webhook carries it; the
    ``webhook_test`` ping is not a lifecycle event and is not in the document."""
    data = orjson.loads(body) if isinstance(body, bytes | str) else body
    if data.get("type") != TEST_EVENT_TYPE:
        check("intentEvent", data)
