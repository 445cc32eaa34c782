"""Public lifecycle events and their envelope.

An event is recorded by the domain as a :class:`PendingEvent` and turned into its
public envelope by :func:`envelope` when the lifecycle writes it to the outbox::

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
token's ``min_sweep``).

Every intent that reaches a terminal status has exactly one *terminal event*
(:func:`is_terminal`), recorded in the same transaction as that status:
``intent_completed`` (COMPLETED), ``intent_expired`` (EXPIRED), ``intent_cancelled``
(CANCELLED), or ``intent_refunded`` of reason ``expired``, ``failed``, ``cancelled`` or
``merchant`` (REFUNDED). Events after it are only
``intent_refunded`` of another reason (an excess, a late or wrong-token deposit).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from eth_utils import to_checksum_address

from intentd.domain.actions import RefundReason
from intentd.domain.amounts import format_amount
from intentd.domain.status import FundingStatus
from intentd.domain.valuation import render_valuation

if TYPE_CHECKING:
    from intentd.domain.deposits import Deposit

API_VERSION = "v1"
_EVENT_NAMESPACE = uuid.UUID("6f1c0d9e-3a55-4c59-9b0e-1d1e4b6a1f00")


class EventType(StrEnum):
    INTENT_FUNDED = "intent_funded"
    """A deposit of ``tokenIn`` was credited (one per credit; covered once
    ``data.funding.shortfall`` is ``"0"``)."""
    INTENT_INITIATED = "intent_initiated"
    """The relayer's prefill is broadcast on the destination chain."""
    INTENT_COMPLETED = "intent_completed"
    """The prefill is confirmed: the recipient has the funds (terminal)."""
    INTENT_REFUNDED = "intent_refunded"
    """A refund to ``refund_address`` is confirmed (terminal for reasons ``expired``,
    ``failed``, ``cancelled`` and ``merchant``)."""
    INTENT_EXPIRED = "intent_expired"
    """``expires_at`` passed with nothing to refund: nothing received, or less than
    the token's ``min_sweep`` (terminal)."""
    INTENT_CANCELLED = "intent_cancelled"
    """The merchant cancelled the PENDING intent with nothing to refund: nothing
    received, or less than the token's ``min_sweep`` (terminal)."""


Mode = Literal["test", "live"]
"""An event's mode: ``live`` for an intent on a main network, ``test`` otherwise (the
networks a ``live`` or a ``test`` API key opens, :mod:`intentd.credentials`)."""

ENDING_REFUND_REASONS = frozenset(
    {RefundReason.EXPIRED, RefundReason.FAILED, RefundReason.CANCELLED, RefundReason.MERCHANT}
)
"""Refund reasons whose ``intent_refunded`` ends the intent."""


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An event the domain decided on; the envelope is built when it is stored."""

    type: EventType
    sequence: int
    funding_status: FundingStatus
    received: int
    total: int
    deposit: Deposit | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Event-specific facts (``prefill``, ``refund``), amounts in base units."""


def mode_of(network: str) -> Mode:
    """The mode of an intent whose source chain is of network class ``network``."""
    return "live" if network == "main" else "test"


def is_terminal(event_type: EventType | str, refund_reason: str | None = None) -> bool:
    """Whether an event of ``event_type`` (and, for a refund, ``refund_reason``) is the
    one that ends its intent."""
    if event_type in (
        EventType.INTENT_COMPLETED,
        EventType.INTENT_EXPIRED,
        EventType.INTENT_CANCELLED,
    ):
        return True
    return event_type == EventType.INTENT_REFUNDED and refund_reason in ENDING_REFUND_REASONS


def event_id(intent_id: int, sequence: int) -> str:
    """The same id however often the event is rebuilt or relayed."""
    return str(uuid.uuid5(_EVENT_NAMESPACE, f"intent:{intent_id}:event:{sequence}"))


def envelope(
    event: PendingEvent,
    *,
    intent_id: int,
    record: Mapping[str, Any],
    decimals: int,
    created_at: datetime,
    mode: Mode,
    decimals_of: Callable[[str, str], int] | None = None,
) -> dict[str, Any]:
    """The public form of ``event`` for the intent whose current record is ``record``.

    ``mode`` is the intent's (:func:`mode_of` its source chain's network); ``decimals``
    are ``tokenIn``'s; ``decimals_of(chain, token)`` gives those of another
    token (a refund of a wrong token), defaulting to ``decimals``.
    """
    data: dict[str, Any] = {
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
            "token": to_checksum_address(event.deposit.token),
            "from": to_checksum_address(event.deposit.from_address),
            "amount": format_amount(event.deposit.amount, decimals),
        }
    if "prefill" in event.extra:
        data["prefill"] = dict(event.extra["prefill"])
    if "valuation" in event.extra:  # a revalued intent's credit (domain.valuation)
        data["valuation"] = render_valuation(event.extra["valuation"], decimals, decimals_of)
    if "refund" in event.extra:
        refund = event.extra["refund"]
        places = decimals_of(refund["chain"], refund["token"]) if decimals_of else decimals
        data["refund"] = {
            "reason": refund["reason"],
            "chain": refund["chain"],
            "token": to_checksum_address(refund["token"]),
            "amount": format_amount(refund["amount"], places),
            "amount_sent": format_amount(refund["amount_sent"], places),
            "gas_cost": str(refund["gas_cost"]),
            "tx_hash": refund["tx_hash"],
        }
    return {
        "id": event_id(intent_id, event.sequence),
        "type": event.type.value,
        "api_version": API_VERSION,
        "created_at": created_at.isoformat().replace("+00:00", "Z"),
        "sequence": event.sequence,
        "mode": mode,
        "intent": dict(record),
        "data": data,
    }
