"""Which endpoints hear an event (pure).

An endpoint belongs to a client and a mode (``test`` or ``live``, the mode of the API
key that registered it, :mod:`intentd.contract.mode`). An event goes to the enabled
endpoints of the intent's client whose mode is the event's and which subscribe to its
type (or to all types: the types an endpoint may name are the contract's
``EventType``). An event's mode is ``live`` when the intent's source chain is a main
network and ``test`` otherwise, so a test intent's events reach test endpoints only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from intentd.contract.mode import Mode, mode_named, mode_of

__all__ = ["Subscription", "event_mode", "subscribers"]


@dataclass(frozen=True, slots=True)
class Subscription:
    """What matching needs to know of an endpoint."""

    endpoint_id: UUID
    client_id: UUID
    mode: Mode
    event_types: frozenset[str] | None
    """None: every type."""
    enabled: bool

    def wants(self, client_id: UUID, mode: Mode, event_type: str) -> bool:
        return (
            self.enabled
            and self.client_id == client_id
            and self.mode == mode
            and (self.event_types is None or event_type in self.event_types)
        )


def event_mode(event: Mapping[str, Any], networks: Mapping[str, str]) -> Mode:
    """``event["mode"]`` if the envelope carries one, else from the network class of
    the intent's source chain (``networks``: chain name to ``main``/``test``); an
    unknown chain counts as ``test`` (never sent to live endpoints by mistake)."""
    given = mode_named(event.get("mode"))
    if given is not None:
        return given
    chain = str(event.get("intent", {}).get("source_chain", ""))
    return mode_of(networks.get(chain, ""))


def subscribers(
    subscriptions: Iterable[Subscription], client_id: UUID, mode: Mode, event_type: str
) -> list[Subscription]:
    """The subscriptions that receive an event, in the order given."""
    return [s for s in subscriptions if s.wants(client_id, mode, event_type)]
