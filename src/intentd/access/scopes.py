"""API key scopes (restricted keys) and the one table of which operation needs which.

A key made before scopes existed, or made without ``--scope``, has every scope
(``scopes`` None). A restricted key may call an operation only if it holds the scope
the table names for it (:func:`required_scope`); an operation the table names as
:data:`ANY_KEY` (chains, quotes: configuration, no client data) is open to every key,
and an operation the table does not list at all is open only to a key with every
scope, so a route added without a line here is never opened to restricted keys by
mistake (a unit test lists the app's routes against this table).
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum
from typing import Final, Literal

__all__ = [
    "ANY_KEY",
    "OPERATIONS",
    "PREFIXES",
    "Scope",
    "parse_scopes",
    "required_scope",
    "scope_allows",
]


class Scope(StrEnum):
    INTENTS_READ = "intents:read"
    """Read intents (one, the list) and payment sessions' intents."""
    INTENTS_WRITE = "intents:write"
    """Create intents and payment sessions, trigger processing."""
    REFUNDS = "refunds"
    """Cancel and refund intents (money goes back to the payer); read refund approvals."""
    WEBHOOKS = "webhooks"
    """Every webhook endpoint operation."""
    EVENTS_READ = "events:read"
    """The event log and an intent's timeline."""
    REPORTS_READ = "reports:read"
    """Reports and exports (``/api/v1/reports/...``)."""


ANY_KEY: Final = "any"
"""An operation every key may call, whatever its scopes."""
Need = Scope | Literal["any"]

_P = "/api/v1"
OPERATIONS: dict[tuple[str, str], Need] = {
    ("GET", f"{_P}/chains"): ANY_KEY,
    ("GET", f"{_P}/chains/all"): ANY_KEY,
    ("GET", f"{_P}/chains/{{chain}}/tokens"): ANY_KEY,
    ("GET", f"{_P}/chains/tokens/all"): ANY_KEY,
    ("GET", f"{_P}/quotes/multi-source"): ANY_KEY,
    ("GET", f"{_P}/quotes/single-source"): ANY_KEY,
    ("GET", f"{_P}/quotes/bridge-options"): ANY_KEY,
    ("GET", f"{_P}/intents"): Scope.INTENTS_READ,
    ("GET", f"{_P}/intents/{{intent_id}}"): Scope.INTENTS_READ,
    ("GET", f"{_P}/intents/by-address/{{intent_address}}"): Scope.INTENTS_READ,
    ("GET", f"{_P}/intents/address/{{intent_address}}"): Scope.INTENTS_READ,
    ("GET", f"{_P}/intents/user/{{sender}}"): Scope.INTENTS_READ,
    ("POST", f"{_P}/intents"): Scope.INTENTS_WRITE,
    ("POST", f"{_P}/intents/{{intent_address}}/trigger-processing"): Scope.INTENTS_WRITE,
    ("POST", f"{_P}/sessions"): Scope.INTENTS_WRITE,
    ("POST", f"{_P}/modal/sessions"): Scope.INTENTS_WRITE,
    ("POST", f"{_P}/intents/{{intent_address}}/cancel"): Scope.REFUNDS,
    ("POST", f"{_P}/intents/{{intent_address}}/refund"): Scope.REFUNDS,
    ("GET", f"{_P}/refund-approvals/{{approval_id}}"): Scope.REFUNDS,
    ("GET", f"{_P}/events"): Scope.EVENTS_READ,
    ("GET", f"{_P}/intents/{{intent_id}}/events"): Scope.EVENTS_READ,
}
"""(method, route template) → what the operation needs; :data:`PREFIXES` add the rest."""

PREFIXES: tuple[tuple[str, Need], ...] = (
    (f"{_P}/webhooks", Scope.WEBHOOKS),
    (f"{_P}/reports", Scope.REPORTS_READ),
)
"""Every operation under these paths needs the scope (whatever the method)."""


def required_scope(method: str, template: str) -> Need | None:
    """What the operation ``method template`` needs; None: it is not in the table (a
    key with every scope only)."""
    found = OPERATIONS.get((method.upper(), template))
    if found is not None:
        return found
    for prefix, need in PREFIXES:
        if template == prefix or template.startswith(prefix + "/"):
            return need
    return None


def scope_allows(scopes: Collection[str] | None, need: Need | None) -> bool:
    """Whether a key holding ``scopes`` (None: every scope) may call an operation that
    needs ``need``."""
    if scopes is None or need == ANY_KEY:
        return True
    return need is not None and need in scopes


def parse_scopes(values: Collection[str]) -> frozenset[Scope]:
    """The scopes named in ``values`` (also comma lists); ValueError naming an unknown one."""
    found: set[Scope] = set()
    for value in values:
        for part in value.split(","):
            name = part.strip()
            if not name:
                continue
            try:
                found.add(Scope(name))
            except ValueError:
                known = ", ".join(s.value for s in Scope)
                raise ValueError(f"unknown scope {name!r}; one of {known}") from None
    if not found:
        raise ValueError("give at least one scope")
    return frozenset(found)
