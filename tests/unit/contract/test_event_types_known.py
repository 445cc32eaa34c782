"""Every event type is known to the webhooks, the API and the docs.

The types are the domain's ``EventType``; a new member fails these tests until the
webhooks' subscription filter and the event log's filter accept it (they take the enum's
values), the committed OpenAPI and AsyncAPI documents list it (``make openapi``,
``make asyncapi``) and docs/events.md and docs/webhooks.md describe it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import orjson
import pytest

from intentd.api.events.params import parse_types
from intentd.api.webhooks.models import WebhookCreate, WebhookUpdate
from intentd.contract.events import EventType, EventTypeText
from intentd.webhooks.matching import Subscription, subscribers

DOCS = Path(__file__).resolve().parents[3] / "docs"
TYPES = [t.value for t in EventType]


def test_the_webhooks_subscription_filter_takes_every_type() -> None:
    assert list(get_args(EventTypeText)) == TYPES
    body = orjson.dumps({"url": "https://example.com/hook", "event_types": TYPES})
    assert WebhookCreate.model_validate_json(body).event_types == TYPES
    assert WebhookUpdate.model_validate_json(body).event_types == TYPES
    with pytest.raises(ValueError, match="intent_lost"):
        WebhookCreate.model_validate_json(
            b'{"url": "https://e.com", "event_types": ["intent_lost"]}'
        )


def test_a_subscription_to_every_type_hears_each() -> None:
    from uuid import uuid4

    client = uuid4()
    one = Subscription(uuid4(), client, "test", frozenset(TYPES), enabled=True)
    for name in TYPES:
        assert subscribers([one], client, "test", name) == [one]


def test_the_event_log_filters_by_every_type() -> None:
    assert parse_types([",".join(TYPES)]) == tuple(TYPES)


def _enums_of(node: Any, key: str) -> list[list[str]]:
    """Every ``enum`` under a property named ``key`` in ``node``."""
    found: list[list[str]] = []
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key:
                found.extend(_enums(value))
            found.extend(_enums_of(value, key))
    elif isinstance(node, list):
        for value in node:
            found.extend(_enums_of(value, key))
    return found


def _enums(node: Any) -> list[list[str]]:
    if isinstance(node, dict):
        own = [node["enum"]] if "enum" in node else []
        return own + [e for value in node.values() for e in _enums(value)]
    if isinstance(node, list):
        return [e for value in node for e in _enums(value)]
    return []


def test_the_committed_openapi_document_lists_every_type() -> None:
    doc = orjson.loads((DOCS / "openapi.json").read_bytes())
    assert doc["components"]["schemas"]["EventType"]["enum"] == TYPES
    subscriptions = _enums_of(doc["paths"], "event_types")
    assert len(subscriptions) >= 2  # creating and changing an endpoint
    assert all(enum == TYPES for enum in subscriptions), "run `make openapi`"


def test_the_committed_asyncapi_document_lists_every_type() -> None:
    doc = orjson.loads((DOCS / "asyncapi.json").read_bytes())
    envelope = doc["components"]["schemas"]["Envelope"]
    assert envelope["properties"]["type"]["enum"] == TYPES, "run `make asyncapi`"


@pytest.mark.parametrize("page", ["events.md", "webhooks.md"])
def test_the_docs_describe_every_type(page: str) -> None:
    rows = re.findall(r"^\| `([a-z_]+)` \|", (DOCS / page).read_text(), flags=re.MULTILINE)
    missing = [name for name in TYPES if name not in rows]
    assert not missing, f"docs/{page} has no row for {missing} in its table of types"
