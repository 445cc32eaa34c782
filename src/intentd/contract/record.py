"""The intent record: the intent as every role reads it, and its public JSON.

:class:`IntentRow` is the stored intent (lowercase addresses, base units, the columns
of ``intents``); :class:`IntentRecord` is its public record (the spec's fields, EIP-55
addresses, decimal strings for money, ISO 8601 UTC times), which :func:`render_record`
makes of a row and which the API answers, every event carries (``intent``) and the
OpenAPI and AsyncAPI documents describe (their schema is generated from it). Besides the
spec's fields the record carries ``funding_status`` and ``amount_received`` (decimal, in
``tokenIn`` units), which a client following an under-funded intent needs,
``session_id``, and, for an intent priced at creation, the ``prices`` it was created at
and its last ``valuation`` (docs/pricing.md, *Slippage*).

A new public field is added here: to :class:`IntentRow` (and the table), to
:class:`IntentRecord`, and in :func:`render_record`, which mypy checks against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

from pydantic import Field
from typing_extensions import TypedDict

from intentd.contract.formats import (
    address_text,
    decimal_text,
    optional_address_text,
    time_text,
    values_of,
)
from intentd.domain.amounts import format_amount
from intentd.domain.intent import Intent, Terms
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.domain.valuation import Owed, render_valuation

__all__ = [
    "FundingStatusText",
    "IntentRecord",
    "IntentRow",
    "IntentStatusText",
    "IntentTerms",
    "render_record",
]

if TYPE_CHECKING:
    IntentStatusText = str
    FundingStatusText = str
else:
    IntentStatusText = values_of(IntentStatus)
    FundingStatusText = values_of(FundingStatus)


@dataclass(frozen=True, slots=True, kw_only=True)
class IntentTerms:
    """What an intent asks, as planned from its request: the fields a stored intent
    (:class:`IntentRow`) and one about to be stored (``intents.ports.NewIntent``) share,
    written once."""

    client_id: UUID
    sender: str | None
    initial_amount: str
    amount_symbol: str | None
    source_chain: str
    destination_chain: str
    token_in: str
    token_out: str
    token_out_decimals: int
    asset_token_symbol: str
    asset_token_decimals: int
    total_due: int
    fees_in_asset: int
    app_fee_in_asset: int
    amount_out: int
    fees_in_usd: Decimal
    app_fee_in_usd: Decimal
    total_in_usd: Decimal | None
    slippage: Decimal
    recipient: str
    refund_address: str
    coordinator: str
    bridger: str
    metadata: dict[str, Any]
    expires_at: datetime
    session_id: str | None = None
    """The payment-modal session the intent was created in (see docs/api.md), if any."""
    owed_amount: Decimal | None = None
    """What the recipient is owed, in ``owed_symbol``, when ``amount`` was converted at a
    price (the intent is then revalued at each credit); None otherwise."""
    owed_symbol: str | None = None
    prices: list[dict[str, Any]] | None = None
    """The USD prices the intent was created at (as its quote showed them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IntentRow(IntentTerms):
    """An intent as stored: its terms and what became of it."""

    id: int
    address_index: int
    intent_address: str
    relayer: str
    bridge_extra_data: str
    status: IntentStatus
    funding_status: FundingStatus
    received: int
    tx_hash: str | None
    needs_relay: bool
    event_sequence: int
    version: int
    created_at: datetime
    updated_at: datetime
    refunded: int = 0
    """Credited ``tokenIn`` already decided to go back to the user (``Intent.refunded``)."""
    valuation: dict[str, Any] | None = None
    """The last revaluation (:func:`render_record` shows it), or None."""
    awaiting_price: bool = False
    """A payment was credited while no price could be trusted (``Intent.awaiting_price``)."""

    @property
    def owed(self) -> Owed | None:
        """What the recipient is owed, if the intent is revalued."""
        if self.owed_symbol is None or self.owed_amount is None:
            return None
        return Owed(self.owed_amount, self.owed_symbol, self.slippage)

    def intent(self, *, min_sweep: int = 0) -> Intent:
        """The domain aggregate that deposits, time and execution results change;
        ``min_sweep``: ``tokenIn``'s minimum refund on the source chain (configuration)."""
        return Intent(
            id=self.id,
            terms=Terms(
                source_chain=self.source_chain,
                destination_chain=self.destination_chain,
                token_in=self.token_in,
                token_out=self.token_out,
                total_due=self.total_due,
                fees=self.fees_in_asset + self.app_fee_in_asset,
                amount_out=self.amount_out,
                recipient=self.recipient,
                refund_address=self.refund_address,
                expires_at=self.expires_at,
                min_sweep=min_sweep,
                owed=self.owed,
                decimals_in=self.asset_token_decimals,
                decimals_out=self.token_out_decimals,
            ),
            received=self.received,
            status=self.status,
            funding=self.funding_status,
            event_sequence=self.event_sequence,
            tx_hash=self.tx_hash,
            relayer=self.relayer,
            refunded=self.refunded,
            awaiting_price=self.awaiting_price,
        )


class IntentRecord(TypedDict):
    """The spec's intent record, plus ``funding_status``, ``amount_received``, ``session_id``."""

    id: int
    client_id: str
    sender: str | None
    initialAmount: str
    fees_in_usd: str
    app_fee_in_usd: str
    total_amount_in_usd: str | None
    total_amount_in_asset_token: str
    fees_in_asset_token: str
    app_fee_in_asset_token: str
    asset_token_symbol: str
    asset_token_decimals: int
    slippage: str
    tokenIn: str
    tokenOut: str
    intent_address: str
    source_chain: str
    destination_chain: str
    recipient: str
    refund_address: str
    relayer: str
    coordinator: str
    bridger: str
    bridgeExtraData: str
    intent_nonce: int
    intent_status: IntentStatusText
    funding_status: FundingStatusText
    amount_received: str
    tx_hash: str | None
    needs_relay: bool
    expires_at: str
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    session_id: str | None
    prices: Annotated[
        list[dict[str, Any]],
        Field(description="the USD prices the intent was created at (as its quote showed them)"),
    ]
    valuation: Annotated[
        dict[str, Any] | None,
        Field(
            description="for an intent revalued at its payment (an amount converted at a"
            " price): its last revaluation, or {status: awaiting_price} while a credited"
            " payment awaits a trusted price; null otherwise and before the first payment"
            " (docs/pricing.md)"
        ),
    ]


def render_record(row: IntentRow) -> IntentRecord:
    """The public record of ``row``, as JSON-ready values."""
    decimals = row.asset_token_decimals
    return {
        "id": row.id,
        "client_id": str(row.client_id),
        "sender": optional_address_text(row.sender),
        # the total less the fees: the creation's figure, or that of a raised total
        "initialAmount": format_amount(
            row.total_due - row.fees_in_asset - row.app_fee_in_asset, decimals
        ),
        "fees_in_usd": decimal_text(row.fees_in_usd),
        "app_fee_in_usd": decimal_text(row.app_fee_in_usd),
        "total_amount_in_usd": (
            decimal_text(row.total_in_usd) if row.total_in_usd is not None else None
        ),
        "total_amount_in_asset_token": format_amount(row.total_due, decimals),
        "fees_in_asset_token": format_amount(row.fees_in_asset, decimals),
        "app_fee_in_asset_token": format_amount(row.app_fee_in_asset, decimals),
        "asset_token_symbol": row.asset_token_symbol,
        "asset_token_decimals": decimals,
        "slippage": decimal_text(row.slippage),
        "tokenIn": address_text(row.token_in),
        "tokenOut": address_text(row.token_out),
        "intent_address": address_text(row.intent_address),
        "source_chain": row.source_chain,
        "destination_chain": row.destination_chain,
        "recipient": address_text(row.recipient),
        "refund_address": address_text(row.refund_address),
        "relayer": address_text(row.relayer),
        "coordinator": address_text(row.coordinator),
        "bridger": address_text(row.bridger),
        "bridgeExtraData": row.bridge_extra_data,
        "intent_nonce": row.address_index,
        "intent_status": row.status.value,
        "funding_status": row.funding_status.value,
        "amount_received": format_amount(row.received, decimals),
        "tx_hash": row.tx_hash,
        "needs_relay": row.needs_relay,
        "expires_at": time_text(row.expires_at),
        "metadata": row.metadata,
        "created_at": time_text(row.created_at),
        "updated_at": time_text(row.updated_at),
        "session_id": row.session_id,
        "prices": row.prices or [],
        "valuation": _valuation(row),
    }


def _valuation(row: IntentRow) -> dict[str, Any] | None:
    """The last revaluation of a revalued intent as the record shows it: null until the
    first credit; ``status`` ``awaiting_price`` while a credited payment awaits a price."""
    if row.owed_symbol is None:
        return None
    if row.awaiting_price:
        return {"status": "awaiting_price"}
    if row.valuation is None:
        return None
    found = dict(row.valuation)
    found.pop("status", None)
    return {
        "status": "valued",
        **render_valuation(found, row.asset_token_decimals, lambda _c, _t: row.token_out_decimals),
    }
