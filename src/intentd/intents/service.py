"""Creating intents: the one code path the CLI and the HTTP API share.

:func:`plan_intent` validates a request against the configured chains and tokens
and computes every stored figure (pure). :func:`create_intent` has an
``IntentWriter`` draw a fresh derivation index from the database sequence, derive the
single-use address and insert the intent.

Decisions the spec leaves open (see docs/intents.md):

- ``amount`` is what the recipient gets, a decimal string in whole units of
  ``amountSymbol`` (default: ``tokenIn``'s symbol, ``"12.5"`` USDC), with no more
  decimals than that token has. ``amountSymbol`` may also be ``USD``/``USDC`` or a
  stablecoin symbol (1:1 for a stablecoin ``tokenIn``) or any priced symbol
  (converted at the price source's prices, rounded up); see ``intents.denomination``.
- Fees come from ``intents.quotes.quote`` (the same code as the quote endpoints):
  the payer owes ``total = amount + route fee + application fee`` in ``tokenIn``.
- ``tokenOut`` defaults to the destination chain's token with ``tokenIn``'s symbol.
- Required: ``amount``, ``tokenIn``, ``source_chain``, ``destination_chain``,
  ``recipient``, ``refund_address``. Optional: ``sender``, ``amountSymbol``,
  ``tokenOut``, ``metadata`` (a JSON object of at most 16 KiB whose numbers are
  below 2**63 in magnitude), ``expires_in``, ``slippage``.
- An amount converted at a price (in USD, or in another priced symbol) is owed to the
  recipient as such: the intent is revalued when its payment is credited, with
  ``slippage`` (default ``pricing.slippage`` of ``tokenIn``'s category); the prices it
  was created at are recorded with it (docs/pricing.md, *Slippage*).
- Addresses must be valid EIP-55 checksums or all one case.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import orjson

from intentd.contract.record import IntentRow
from intentd.intents import quotes, routing
from intentd.intents.open_limit import OpenIntentLimit
from intentd.intents.ports import IntentStore, NewIntent
from intentd.intents.slippage import requested_slippage
from intentd.intents.validation import (
    IdempotencyConflict,
    IntentRequestError,
    check_address,
)
from intentd.intents.writer import IntentWriter
from intentd.pricing import PriceSource
from intentd.pricing.cache import FeedPrices
from intentd.settings import Settings

__all__ = [
    "MAX_METADATA_BYTES",
    "IdempotencyConflict",
    "IntentRequest",
    "IntentRequestError",
    "OpenIntentLimit",
    "create_intent",
    "plan_intent",
]

MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_NUMBER = 2**63


@dataclass(frozen=True, slots=True)
class IntentRequest:
    """The spec's payment intent request, with our optional extras."""

    amount: str
    token_in: str
    source_chain: str
    destination_chain: str
    recipient: str
    refund_address: str
    sender: str | None = None
    amount_symbol: str | None = None
    token_out: str | None = None
    metadata: dict[str, Any] | None = None
    expires_in: int | None = None
    bridge: str | None = None
    """Bridge option to price the route with; the cheapest serving it by default."""
    expires_by: datetime | None = None
    """The latest the intent may expire, whatever ``expires_in`` says (a session's
    intents expire by the session's end). A moment, not a duration, so a retry of the
    same request a second later has the same fingerprint."""
    slippage: str | None = None
    """The slippage of an intent revalued at its payment (a fraction, ``"0.005"``);
    default ``pricing.slippage`` of ``tokenIn``'s category (``intents.slippage``)."""

    def fingerprint(self) -> str:
        """Hash of the request, to tell a retry from a different request."""
        fields = asdict(self)
        for added in ("expires_by", "slippage"):  # older requests hash as they did
            if fields[added] is None:
                del fields[added]
        body = orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(body).hexdigest()


def plan_intent(
    settings: Settings,
    request: IntentRequest,
    *,
    client_id: UUID,
    now: datetime,
    idempotency_key: str | None = None,
    prices: PriceSource | None = None,
    session_id: str | None = None,
) -> NewIntent:
    """Validate ``request`` and compute the intent to store (no I/O).

    ``prices`` defaults to the config's prices with no feed read: a symbol with feeds
    is then refused (``price_unavailable``), never priced from the static table.
    """
    path = routing.route(
        settings,
        request.source_chain,
        request.token_in,
        request.destination_chain,
        request.token_out,
    )
    quote = quotes.quote(
        settings,
        prices if prices is not None else FeedPrices(settings),
        path,
        request.amount,
        request.amount_symbol,
        bridge=request.bridge,
    )
    metadata = request.metadata or {}
    if not isinstance(metadata, dict):
        raise IntentRequestError("invalid_metadata", "metadata", "metadata must be a JSON object")
    if not _numbers_fit(metadata):
        raise IntentRequestError(
            "invalid_metadata",
            "metadata",
            f"metadata numbers must be smaller than {MAX_METADATA_NUMBER} in magnitude",
        )
    if len(orjson.dumps(metadata)) > MAX_METADATA_BYTES:
        raise IntentRequestError(
            "metadata_too_large", "metadata", f"metadata exceeds {MAX_METADATA_BYTES} bytes"
        )
    expires_in = request.expires_in or settings.intents.default_expires_in
    low, high = settings.intents.min_expires_in, settings.intents.max_expires_in
    if not low <= expires_in <= high:
        raise IntentRequestError(
            "invalid_expiry",
            "expires_in",
            f"expires_in must be between {low} and {high} seconds",
        )
    owed = requested_slippage(settings, quote, request.slippage)
    fees = quote.fees
    source = path.source
    return NewIntent(
        client_id=client_id,
        idempotency_key=idempotency_key,
        request_hash=request.fingerprint(),
        sender=check_address(request.sender, "sender", required=False),
        initial_amount=quote.asset(fees.amount),
        amount_symbol=request.amount_symbol,
        source_chain=source.name,
        destination_chain=path.destination.name,
        token_in=path.token_in_address,
        token_out=path.token_out_address,
        token_out_decimals=path.token_out.decimals,
        asset_token_symbol=path.token_in.symbol,
        asset_token_decimals=path.token_in.decimals,
        total_due=fees.total,
        fees_in_asset=fees.route_fee,
        app_fee_in_asset=fees.app_fee,
        amount_out=quote.amount_out,
        fees_in_usd=quote.fees_in_usd,
        app_fee_in_usd=quote.app_fee_in_usd,
        total_in_usd=quote.total_in_usd,
        slippage=Decimal(0) if owed is None else owed.slippage,
        recipient=_required(check_address(request.recipient, "recipient")),
        refund_address=_required(check_address(request.refund_address, "refund_address")),
        coordinator=source.coordinator.lower(),
        bridger=source.bridger.lower(),
        metadata=metadata,
        expires_at=_expiry(now, expires_in, request.expires_by),
        session_id=session_id,
        owed_amount=None if owed is None else owed.amount,
        owed_symbol=None if owed is None else owed.symbol,
        prices=[price.used(symbol).as_json() for symbol, price in quote.prices] or None,
    )


def _numbers_fit(value: Any) -> bool:
    """Every number in ``value`` (a decoded JSON document) is finite and below
    ``MAX_METADATA_NUMBER`` in magnitude. PostgreSQL keeps a JSON number exactly: a
    float such as ``1.9e19`` comes back as a 20-digit integer, which no 64-bit JSON
    encoder writes, so the stored intent could not be answered."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif (
            isinstance(item, int | float)
            and not isinstance(item, bool)
            and not abs(item) < MAX_METADATA_NUMBER  # also true of NaN and infinities
        ):
            return False
    return True


def _required(value: str | None) -> str:
    assert value is not None
    return value


async def create_intent(
    settings: Settings,
    writer: IntentWriter,
    request: IntentRequest,
    *,
    client_id: UUID,
    now: datetime,
    idempotency_key: str | None = None,
    prices: PriceSource | None = None,
    session_id: str | None = None,
) -> IntentRow:
    """Create the intent, or return the one this client made with ``idempotency_key``.

    ``writer`` draws the derivation index (a sequence never rolls back, so a failed
    insert only leaves a gap) and inserts the intent, committed on its own or
    together with concurrent creates (``intents.writer``). With a key, the existing
    intent is looked up first: one more round trip.
    """
    new = plan_intent(
        settings,
        request,
        client_id=client_id,
        now=now,
        idempotency_key=idempotency_key,
        prices=prices,
        session_id=session_id,
    )
    if idempotency_key is not None:
        existing = await _existing(writer.store, new)
        if existing is not None:
            return existing
    try:
        row = await writer.insert(new)
    except OpenIntentLimit:
        # A retry racing the create it repeats may be counted first: it gets that one.
        existing = await _existing(writer.store, new) if idempotency_key is not None else None
        if existing is None:
            raise
        return existing
    if row is None:  # a concurrent request with the same key won the race
        existing = await _existing(writer.store, new)
        assert existing is not None
        return existing
    return row


async def _existing(store: IntentStore, new: NewIntent) -> IntentRow | None:
    assert new.idempotency_key is not None
    found = await store.find_by_idempotency_key(new.client_id, new.idempotency_key)
    if found is None:
        return None
    row, request_hash = found
    if request_hash != new.request_hash:
        raise IdempotencyConflict(
            "idempotency_key_reused",
            "Idempotency-Key",
            "this Idempotency-Key was used with a different request",
        )
    return row


def _expiry(now: datetime, expires_in: int, expires_by: datetime | None) -> datetime:
    expires_at = now + timedelta(seconds=expires_in)
    return expires_at if expires_by is None else min(expires_at, expires_by)
