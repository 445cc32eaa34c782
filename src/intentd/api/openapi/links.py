"""OpenAPI 3 links between the operations of the served document.

A link on a response says how a value of that response feeds another operation, e.g.
the ``intent_address`` of a created intent is the path parameter of
``GET /intents/by-address/{intent_address}``. Clients and generators may read them;
we add them for schemathesis's stateful phase, which follows links to chain calls
(create an intent, then read it and trigger its processing) instead of guessing ids
that do not exist. FastAPI has no way to declare links, so they are added to the
generated document here, by path and method; the target's ``operationId`` is read
from the document itself.

The session links hand the ``session_token`` of ``POST /sessions`` to the modal's
endpoints as their ``Authorization`` header: a runtime expression embedded in the
value (``Bearer {$response.body#/session_token}``), with the location named
(``header.Authorization``) since the header belongs to the security scheme, not to
the declared parameters.

``add_links`` fails (``LookupError``) if a route, status or parameter a link names is
missing: a renamed route must break the document's tests, not drop links silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["LINKS", "Link", "add_links"]


@dataclass(frozen=True, slots=True)
class Link:
    """A link from a response of ``source`` (method, path below the prefix) to ``target``."""

    name: str
    source: tuple[str, str]
    status: str
    target: tuple[str, str]
    parameters: dict[str, str] = field(default_factory=dict)
    description: str = ""


_CREATE_INTENT = ("post", "/intents")
_CREATE_SESSION = ("post", "/sessions")
_SESSION_INTENT = ("post", "/session/intents")
_INTENT_ADDRESS = {"path.intent_address": "$response.body#/intent_address"}
_SESSION_TOKEN = {"header.Authorization": "Bearer {$response.body#/session_token}"}

LINKS: tuple[Link, ...] = (
    Link(
        "GetIntentById",
        _CREATE_INTENT,
        "201",
        ("get", "/intents/{intent_id}"),
        {"path.intent_id": "$response.body#/id"},
        "Read the created intent by its numeric id.",
    ),
    Link(
        "GetIntentEvents",
        _CREATE_INTENT,
        "201",
        ("get", "/intents/{intent_id}/events"),
        {"path.intent_id": "$response.body#/id"},
        "Read the created intent's events (its timeline).",
    ),
    Link(
        "GetIntentByAddress",
        _CREATE_INTENT,
        "201",
        ("get", "/intents/by-address/{intent_address}"),
        _INTENT_ADDRESS,
        "Read the created intent by its deposit address.",
    ),
    Link(
        "TriggerProcessing",
        _CREATE_INTENT,
        "201",
        ("post", "/intents/{intent_address}/trigger-processing"),
        _INTENT_ADDRESS,
        "Look for deposits to the created intent and process them.",
    ),
    Link(
        "GetSession",
        _CREATE_SESSION,
        "201",
        ("get", "/session"),
        _SESSION_TOKEN,
        "Read the session with its token (payment modal).",
    ),
    Link(
        "GetSessionClient",
        _CREATE_SESSION,
        "201",
        ("get", "/session/client"),
        _SESSION_TOKEN,
        "Read what the session may see of its client (payment modal).",
    ),
    Link(
        "GetSessionQuotes",
        _CREATE_SESSION,
        "201",
        ("get", "/session/quotes"),
        _SESSION_TOKEN,
        "Quote the session with its token (payment modal).",
    ),
    Link(
        "CreateSessionIntent",
        _CREATE_SESSION,
        "201",
        _SESSION_INTENT,
        _SESSION_TOKEN,
        "Create an intent within the session with its token (payment modal).",
    ),
    Link(
        "GetSessionIntent",
        _SESSION_INTENT,
        "201",
        ("get", "/session/intents/{intent_address}"),
        _INTENT_ADDRESS,
        "Read the intent created in the session (same session token).",
    ),
    Link(
        "PaymentMade",
        _SESSION_INTENT,
        "201",
        ("post", "/session/intents/{intent_address}/payment-made"),
        _INTENT_ADDRESS,
        "Say the payment of the session's intent was made (same session token).",
    ),
)


def add_links(document: dict[str, Any], prefix: str = "") -> None:
    """Add ``LINKS`` to ``document`` (FastAPI's, paths under ``prefix``), in place."""
    paths: dict[str, Any] = document.get("paths", {})
    schemes: dict[str, Any] = document.get("components", {}).get("securitySchemes", {})
    for link in LINKS:
        source = _operation(paths, prefix, link.source)
        target = _operation(paths, prefix, link.target)
        response = source.get("responses", {}).get(link.status)
        if response is None:
            raise LookupError(f"link {link.name}: {link.source} has no {link.status} response")
        for name in link.parameters:
            _check_parameter(link, target, schemes, name)
        definition: dict[str, Any] = {"operationId": target["operationId"]}
        if link.parameters:
            definition["parameters"] = dict(link.parameters)
        if link.description:
            definition["description"] = link.description
        response.setdefault("links", {})[link.name] = definition


def _operation(paths: dict[str, Any], prefix: str, where: tuple[str, str]) -> dict[str, Any]:
    method, path = where
    operation: dict[str, Any] | None = paths.get(prefix + path, {}).get(method)
    if operation is None or "operationId" not in operation:
        raise LookupError(f"no operation {method.upper()} {prefix}{path} for a link")
    return operation


def _check_parameter(
    link: Link, target: dict[str, Any], schemes: dict[str, Any], qualified: str
) -> None:
    location, _, name = qualified.partition(".")
    if location == "header" and name == "Authorization":
        # Not a parameter (OpenAPI ignores one so named): the target's bearer scheme.
        bearer = any(
            schemes.get(scheme, {}).get("scheme") == "bearer"
            for requirement in target.get("security", [])
            for scheme in requirement
        )
        if bearer:
            return
    elif any(
        p.get("in") == location and p.get("name") == name for p in target.get("parameters", [])
    ):
        return
    raise LookupError(f"link {link.name}: {link.target} takes no {qualified}")
