"""From a Kafka event to what is recorded for its webhooks (pure).

The body sent to endpoints is the Kafka envelope (``domain.events``) with ``mode``
added when the envelope does not carry it; it is serialised once here and every
attempt sends exactly these bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson

from intentd.webhooks.matching import event_mode
from intentd.webhooks.ports import EventToRecord

__all__ = ["MalformedEvent", "parse_event"]


class MalformedEvent(ValueError):
    """An event on the topic that lacks what a webhook needs (it is skipped, logged)."""


def parse_event(value: bytes, networks: Mapping[str, str]) -> EventToRecord:
    """The event in ``value``; ``networks`` maps chain names to ``main``/``test``."""
    try:
        event: Any = orjson.loads(value)
        intent = event["intent"]
        parsed = EventToRecord(
            event_id=str(event["id"]),
            event_type=str(event["type"]),
            client_id=UUID(str(intent["client_id"])),
            mode=event_mode(event, networks),
            intent_id=int(intent["id"]),
            sequence=int(event["sequence"]),
            created_at=datetime.fromisoformat(str(event["created_at"]).replace("Z", "+00:00")),
            body=b"",
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise MalformedEvent(f"{type(exc).__name__}: {exc}") from None
    if "mode" not in event:
        event["mode"] = parsed.mode
    return EventToRecord(
        event_id=parsed.event_id,
        event_type=parsed.event_type,
        client_id=parsed.client_id,
        mode=parsed.mode,
        intent_id=parsed.intent_id,
        sequence=parsed.sequence,
        created_at=parsed.created_at,
        body=orjson.dumps(event),
    )
