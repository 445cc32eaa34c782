"""Public lifecycle events: their types, their envelope, and how it is built.

An event is recorded by the domain as a :class:`~intentd.domain.events.PendingEvent`
and turned into its public :class:`Envelope` by :func:`envelope` when the lifecycle
writes it to the outbox and the event log; the webhooks send the same bytes::

    {
      "id": "<uuid, stable for (intent id, sequence)>",
      "type": "intent_funded",
      "api_version": "v1",
      "created_at": "2026-11-22T10:00:00.000000Z",
      "sequence": 1,                      # per intent, from 1, no gaps
      "mode": "test",                     # "live" for an intent on a main network
      "intent": { ...the intent record... },
      "data": { ...what this event adds... }
    }

Every event carries ``data.funding`` (``status``, ``received``, ``total``,
``shortfall``, ``excess`` as decimal strings in ``tokenIn`` units). ``intent_funded``
adds ``data.deposit`` (``chain``, ``tx_hash``, ``log_index``, ``block_number``,
``token``, ``from``, ``amount``) and, for an intent revalued at its payment,
``data.valuation`` (:func:`~intentd.domain.valuation.render_valuation`; an
``intent_funded`` without ``data.deposit`` values a payment credited while no price
could be trusted); ``intent_initiated`` and ``intent_completed`` add
``data.prefill`` (``tx_hash``, and ``block_number`` once confirmed);
``intent_refunded`` adds ``data.refund`` (``reason``, ``chain``, ``token``,
``amount`` owed, ``amount_sent`` delivered, ``gas_cost`` in native units when gas came
out of the amount, ``tx_hash``); ``intent_expired`` and ``intent_cancelled`` add nothing
(``data.funding.received`` is what stayed at the address: nothing, or less than the
token's ``min_sweep``). Which event ends an intent is the domain's rule
(:func:`~intentd.domain.events.is_terminal`).

The event types are the domain's :class:`~intentd.domain.events.EventType` (the domain
records them; nothing else lists them). A new type is a member there and the domain
code that records it; the webhooks' subscriptions, the event log's filter, the OpenAPI
and AsyncAPI documents take it from that enum, and ``tests/unit/contract`` fail until
docs/events.md describes it and the committed documents are regenerated. A new field
is a key of the shapes below and a line of :func:`envelope` (mypy checks the two agree).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, NotRequired

from pydantic import BaseModel, ConfigDict, Field, with_config
from typing_extensions import TypedDict

from intentd.contract.formats import address_text, time_text, values_of
from intentd.contract.mode import Mode
from intentd.contract.record import FundingStatusText, IntentRecord
from intentd.domain.actions import RefundReason
from intentd.domain.amounts import format_amount
from intentd.domain.events import EventType, PendingEvent
from intentd.domain.valuation import render_valuation

__all__ = [
    "API_VERSION",
    "ENVELOPE_FIELDS",
    "TEST_EVENT_TYPE",
    "Envelope",
    "EventData",
    "EventRecord",
    "EventType",
    "EventTypeText",
    "envelope",
    "event_id",
    "webhook_test_envelope",
]

API_VERSION = "v1"
_EVENT_NAMESPACE = uuid.UUID("6f1c0d9e-3a55-4c59-9b0e-1d1e4b6a1f00")
TEST_EVENT_TYPE = "webhook_test"
"""The type of the event ``POST /webhooks/{id}/test`` sends (to that endpoint only; not
an event type an endpoint subscribes to, never on Kafka)."""

if TYPE_CHECKING:
    EventTypeText = str
    RefundReasonText = str
else:
    EventTypeText = values_of(EventType)
    RefundReasonText = values_of(RefundReason)


_DOCUMENTED = ConfigDict(use_attribute_docstrings=True)
"""The shapes' attribute docstrings are their fields' descriptions in the JSON Schemas."""


@with_config(_DOCUMENTED)
class Funding(TypedDict):
    """The intent's funding right after the event, in ``tokenIn`` units."""

    status: FundingStatusText
    received: str
    """Credited so far."""
    total: str
    """Due."""
    shortfall: str
    """``total`` less ``received``, at least 0: ``"0"`` once covered."""
    excess: str
    """``received`` less ``total``, at least 0 (refunded when the prefill starts)."""


EventDeposit = TypedDict(
    "EventDeposit",
    {
        "chain": str,
        "tx_hash": str,
        "log_index": int,
        "block_number": int,
        "token": str,
        "from": str,
        "amount": str,
    },
)
EventDeposit.__doc__ = "The credited deposit (``intent_funded``); ``amount`` in ``tokenIn`` units."


@with_config(_DOCUMENTED)
class Prefill(TypedDict):
    """The relayer's prefill on the destination chain (``intent_initiated``,
    ``intent_completed``)."""

    tx_hash: str
    block_number: NotRequired[int]
    """Once confirmed (``intent_completed``)."""


@with_config(_DOCUMENTED)
class Refund(TypedDict):
    """A confirmed refund (``intent_refunded``); amounts in the refunded token's units,
    ``gas_cost`` in native base units (when gas came out of the amount, else ``"0"``)."""

    reason: RefundReasonText
    chain: str
    token: str
    amount: str
    """What was owed."""
    amount_sent: str
    """What reached ``refund_address`` (less, when gas came out of the amount)."""
    gas_cost: str
    tx_hash: str


class EventData(TypedDict):
    """What the event adds: ``funding`` always, the others by type."""

    funding: Funding
    deposit: NotRequired[EventDeposit]
    prefill: NotRequired[Prefill]
    valuation: NotRequired[dict[str, Any]]
    """An intent revalued at its payment (``domain.valuation.render_valuation``)."""
    refund: NotRequired[Refund]


@with_config(_DOCUMENTED)
class Envelope(TypedDict):
    """One lifecycle event, as on Kafka, in the event log and in webhooks."""

    id: str
    """UUIDv5 of (intent id, sequence): the same on every redelivery; dedupe on it."""
    type: EventTypeText
    api_version: str
    created_at: str
    """ISO 8601 UTC."""
    sequence: int
    """Per intent, from 1, without gaps, in the order the events happened."""
    mode: Mode
    """``live`` for an intent on a main network, ``test`` otherwise."""
    intent: IntentRecord
    """The intent record after the change."""
    data: EventData


ENVELOPE_FIELDS: tuple[str, ...] = tuple(Envelope.__annotations__)
"""The envelope's fields in the order :func:`envelope` writes them."""


class EventRecord(BaseModel):
    """One lifecycle event (docs/events.md): the same envelope as on Kafka."""

    id: str = Field(description="UUIDv5 of (intent id, sequence): dedupe on it")
    type: EventType
    api_version: str
    created_at: str = Field(description="ISO 8601 UTC")
    sequence: int = Field(ge=1, description="per intent, from 1, without gaps")
    mode: Mode
    intent: IntentRecord = Field(description="the intent record after the change")
    data: dict[str, Any] = Field(
        description="funding (always), deposit, prefill or refund (by type); valuation on"
        " intent_funded of an intent revalued at its payment (docs/events.md)"
    )


def event_id(intent_id: int, sequence: int) -> str:
    """The same id however often the event is rebuilt or relayed."""
    return str(uuid.uuid5(_EVENT_NAMESPACE, f"intent:{intent_id}:event:{sequence}"))


def envelope(
    event: PendingEvent,
    *,
    intent_id: int,
    record: IntentRecord,
    decimals: int,
    created_at: datetime,
    mode: Mode,
    decimals_of: Callable[[str, str], int] | None = None,
) -> Envelope:
    """The public form of ``event`` for the intent whose current record is ``record``.

    ``mode`` is the intent's (:func:`~intentd.contract.mode.mode_of` its source chain's
    network); ``decimals`` are ``tokenIn``'s; ``decimals_of(chain, token)`` gives those
    of another token (a refund of a wrong token), defaulting to ``decimals``.
    """
    data: EventData = {
        "funding": {
            "status": event.funding_status.value,
            "received": format_amount(event.received, decimals),
            "total": format_amount(event.total, decimals),
            "shortfall": format_amount(max(event.total - event.received, 0), decimals),
            "excess": format_amount(max(event.received - event.total, 0), decimals),
        }
    }
    if event.deposit is not None:
        data["deposit"] = {
            "chain": event.deposit.chain,
            "tx_hash": event.deposit.tx_hash,
            "log_index": event.deposit.log_index,
            "block_number": event.deposit.block_number,
            "token": address_text(event.deposit.token),
            "from": address_text(event.deposit.from_address),
            "amount": format_amount(event.deposit.amount, decimals),
        }
    if "prefill" in event.extra:
        prefill = event.extra["prefill"]
        data["prefill"] = {"tx_hash": prefill["tx_hash"]}
        if "block_number" in prefill:
            data["prefill"]["block_number"] = prefill["block_number"]
    if "valuation" in event.extra:  # a revalued intent's credit (domain.valuation)
        data["valuation"] = render_valuation(event.extra["valuation"], decimals, decimals_of)
    if "refund" in event.extra:
        refund = event.extra["refund"]
        places = decimals_of(refund["chain"], refund["token"]) if decimals_of else decimals
        data["refund"] = {
            "reason": refund["reason"],
            "chain": refund["chain"],
            "token": address_text(refund["token"]),
            "amount": format_amount(refund["amount"], places),
            "amount_sent": format_amount(refund["amount_sent"], places),
            "gas_cost": str(refund["gas_cost"]),
            "tx_hash": refund["tx_hash"],
        }
    return {
        "id": event_id(intent_id, event.sequence),
        "type": event.type.value,
        "api_version": API_VERSION,
        "created_at": time_text(created_at),
        "sequence": event.sequence,
        "mode": mode,
        "intent": record.copy(),
        "data": data,
    }


def webhook_test_envelope(
    event_id: str, endpoint_id: str, mode: str, now: datetime
) -> dict[str, Any]:
    """The body of a ``webhook_test`` event for one endpoint: the envelope's fields, with
    ``sequence`` 0, no intent and ``data.endpoint_id``."""
    return {
        "id": event_id,
        "type": TEST_EVENT_TYPE,
        "api_version": API_VERSION,
        "created_at": time_text(now),
        "sequence": 0,
        "mode": mode,
        "intent": None,
        "data": {"endpoint_id": endpoint_id},
    }
