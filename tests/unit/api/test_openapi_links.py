"""The links of the served OpenAPI document (``api.openapi.links``) name operations,
parameters and response fields that exist, so a renamed route or field breaks here."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest

from intentd.api.app import create_app
from intentd.api.openapi.links import add_links
from intentd.settings import Settings

SETTINGS = Settings.model_validate(
    {
        "database": {"url": "postgresql://x/y"},
        "kafka": {"bootstrap_servers": "k:1"},
        "chains": {"A_TESTNET": {"chain_id": 1001, "network": "test", "rpc_urls": ["http://x"]}},
    }
)
EXPECTED = {
    ("post", "/api/v1/intents", "201"): {
        "GetIntentById": "get /api/v1/intents/{intent_id}",
        "GetIntentEvents": "get /api/v1/intents/{intent_id}/events",
        "GetIntentByAddress": "get /api/v1/intents/by-address/{intent_address}",
        "TriggerProcessing": "post /api/v1/intents/{intent_address}/trigger-processing",
    },
    ("post", "/api/v1/sessions", "201"): {
        "GetSession": "get /api/v1/session",
        "GetSessionClient": "get /api/v1/session/client",
        "GetSessionQuotes": "get /api/v1/session/quotes",
        "CreateSessionIntent": "post /api/v1/session/intents",
    },
    ("post", "/api/v1/session/intents", "201"): {
        "GetSessionIntent": "get /api/v1/session/intents/{intent_address}",
        "PaymentMade": "post /api/v1/session/intents/{intent_address}/payment-made",
    },
}
_EXPRESSION = re.compile(r"\{?\$response\.body#(/[^}]*)\}?")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app(SETTINGS).openapi()


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield method, path, operation


def links(document: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(source operation, status, link) of every link of the document."""
    for _, _, operation in operations(document):
        for status, response in operation["responses"].items():
            for link in response.get("links", {}).values():
                yield operation, status, link


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = document
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def test_the_create_answers_link_to_the_operations_on_what_they_created(
    document: dict[str, Any],
) -> None:
    by_id = {op["operationId"]: f"{m} {p}" for m, p, op in operations(document)}
    found = {
        (method, path, status): {
            name: by_id[link["operationId"]] for name, link in response.get("links", {}).items()
        }
        for method, path, operation in operations(document)
        for status, response in operation["responses"].items()
        if response.get("links")
    }
    assert found == EXPECTED


def test_every_link_names_an_operation_parameters_and_fields_that_exist(
    document: dict[str, Any],
) -> None:
    ids = [op["operationId"] for _, _, op in operations(document)]
    schemes = document["components"]["securitySchemes"]
    count = 0
    for source, status, link in links(document):
        count += 1
        assert ids.count(link["operationId"]) == 1, link
        target = next(
            op for _, _, op in operations(document) if op["operationId"] == link["operationId"]
        )
        declared = {(p["in"], p["name"]) for p in target.get("parameters", [])}
        bearer = any(
            schemes[name]["scheme"] == "bearer"
            for requirement in target.get("security", [])
            for name in requirement
        )
        answer = resolve(
            document, source["responses"][status]["content"]["application/json"]["schema"]
        )
        for key, expression in link["parameters"].items():
            location, _, name = key.partition(".")
            if (location, name) == ("header", "Authorization"):
                assert bearer, link
            else:
                assert (location, name) in declared, (key, link)
            pointer = _EXPRESSION.search(expression)
            assert pointer is not None, expression
            field = pointer.group(1).removeprefix("/")
            assert "/" not in field and field in answer["properties"], expression
    assert count == sum(len(names) for names in EXPECTED.values())


@pytest.mark.parametrize(
    "change",
    [
        "rename a route",
        "rename a path parameter",
        "drop a response",
    ],
)
def test_a_link_to_nothing_fails_the_document(document: dict[str, Any], change: str) -> None:
    changed = copy.deepcopy(document)
    for response in (r for _, _, op in operations(changed) for r in op["responses"].values()):
        response.pop("links", None)
    paths = changed["paths"]
    if change == "rename a route":
        paths["/api/v1/intents/by-address/{address}"] = paths.pop(
            "/api/v1/intents/by-address/{intent_address}"
        )
    elif change == "rename a path parameter":
        paths["/api/v1/intents/{intent_id}"]["get"]["parameters"][0]["name"] = "id"
    else:
        del paths["/api/v1/sessions"]["post"]["responses"]["201"]
    with pytest.raises(LookupError):
        add_links(changed, "/api/v1")
