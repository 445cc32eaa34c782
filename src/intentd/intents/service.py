"""Creating intents: the one code path the CLI and the HTTP API share.

:func:`plan_intent` validates a request against the configured chains and tokens
and computes every stored figure (pure). :func:`create_intent` draws a fresh
derivation index from the database sequence, derives the single-use address and
inserts the intent in one transaction.

Decisions the spec leaves open (see docs/intents.md):

- ``amount`` is a decimal string in whole units of ``tokenIn`` (``"12.5"`` USDC),
  with no more decimals than the token has. ``amountSymbol``, when given, must be
  ``tokenIn``'s symbol, or ``USD``/``USDC`` for a stablecoin ``tokenIn`` (1 USD each).
- ``tokenOut`` defaults to the destination chain's token with ``tokenIn``'s symbol.
- Required: ``amount``, ``tokenIn``, ``source_chain``, ``destination_chain``,
  ``recipient``, ``refund_address``. Optional: ``sender``, ``amountSymbol``,
  ``tokenOut``, ``metadata`` (a JSON object of at most 16 KiB), ``expires_in``.
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
from eth_utils import is_address, is_checksum_address

from intentd.adapters import intent_store
from intentd.adapters.postgres import Pool
from intentd.custody import IntentKeys
from intentd.domain.amounts import AmountError, format_amount, parse_amount, rescale
from intentd.intents.record import IntentRow
from intentd.settings import ChainConfig, Settings

MAX_METADATA_BYTES = 16 * 1024
USD_SYMBOLS = frozenset({"USD", "USDC"})


class IntentRequestError(ValueError):
    """A request that cannot become an intent; ``code`` and ``field`` are stable."""

    def __init__(self, code: str, field: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


class IdempotencyConflict(IntentRequestError):
    """The idempotency key was used before with a different request."""


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

    def fingerprint(self) -> str:
        """Hash of the request, to tell a retry from a different request."""
        body = orjson.dumps(asdict(self), option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(body).hexdigest()


def _address(value: str | None, field: str, *, required: bool = True) -> str | None:
    if value is None or value == "":
        if required:
            raise IntentRequestError("field_required", field, f"{field} is required")
        return None
    if not isinstance(value, str) or not is_address(value):
        raise IntentRequestError(
            "invalid_address", field, f"{field} {value!r} is not an EVM address"
        )
    mixed = value[2:] != value[2:].lower() and value[2:] != value[2:].upper()
    if mixed and not is_checksum_address(value):
        raise IntentRequestError(
            "invalid_address_checksum", field, f"{field} {value!r} has a wrong EIP-55 checksum"
        )
    return value.lower()


def _chain(settings: Settings, name: str, field: str) -> ChainConfig:
    chain = settings.chains.get(name)
    if chain is None:
        raise IntentRequestError(
            "unknown_chain", field, f"{field} {name!r} is not one of {sorted(settings.chains)}"
        )
    return chain


def plan_intent(
    settings: Settings,
    request: IntentRequest,
    *,
    client_id: UUID,
    now: datetime,
    idempotency_key: str | None = None,
) -> intent_store.NewIntent:
    """Validate ``request`` and compute the intent to store (no I/O)."""
    source = _chain(settings, request.source_chain, "source_chain")
    destination = _chain(settings, request.destination_chain, "destination_chain")
    token_in_address = _address(request.token_in, "tokenIn")
    assert token_in_address is not None
    token_in = source.token(token_in_address)
    if token_in is None:
        raise IntentRequestError(
            "unknown_token",
            "tokenIn",
            f"tokenIn {request.token_in} is not supported on {source.name}",
        )
    if request.token_out:
        token_out_address = _address(request.token_out, "tokenOut")
        assert token_out_address is not None
        token_out = destination.token(token_out_address)
        if token_out is None:
            raise IntentRequestError(
                "unknown_token",
                "tokenOut",
                f"tokenOut {request.token_out} is not supported on {destination.name}",
            )
    else:
        found = destination.token_by_symbol(token_in.symbol)
        if found is None:
            raise IntentRequestError(
                "unknown_token",
                "tokenOut",
                f"{destination.name} has no {token_in.symbol}; name tokenOut explicitly",
            )
        token_out_address, token_out = found[0].lower(), found[1]
    if token_out.symbol != token_in.symbol and not (
        token_in.category == "stablecoin" and token_out.category == "stablecoin"
    ):
        raise IntentRequestError(
            "unsupported_route",
            "tokenOut",
            f"{token_in.symbol} -> {token_out.symbol} needs a price source; not supported yet",
        )
    symbol = request.amount_symbol or token_in.symbol
    if symbol != token_in.symbol and not (
        symbol.upper() in USD_SYMBOLS and token_in.category == "stablecoin"
    ):
        raise IntentRequestError(
            "unsupported_amount_symbol",
            "amountSymbol",
            f"amountSymbol {symbol!r} must be {token_in.symbol!r} (or USD for a stablecoin)",
        )
    try:
        total = parse_amount(request.amount, token_in.decimals)
    except AmountError as exc:
        raise IntentRequestError(exc.code, "amount", str(exc)) from None
    metadata = request.metadata or {}
    if not isinstance(metadata, dict):
        raise IntentRequestError("invalid_metadata", "metadata", "metadata must be a JSON object")
    if len(orjson.dumps(metadata)) > MAX_METADATA_BYTES:
        raise IntentRequestError(
            "metadata_too_large", "metadata", f"metadata exceeds {MAX_METADATA_BYTES} bytes"
        )
    expires_in = request.expires_in or settings.intents.default_expires_in
    if not 60 <= expires_in <= settings.intents.max_expires_in:
        raise IntentRequestError(
            "invalid_expiry",
            "expires_in",
            f"expires_in must be between 60 and {settings.intents.max_expires_in} seconds",
        )
    usd = Decimal(format_amount(total, token_in.decimals))
    return intent_store.NewIntent(
        client_id=client_id,
        idempotency_key=idempotency_key,
        request_hash=request.fingerprint(),
        sender=_address(request.sender, "sender", required=False),
        initial_amount=format_amount(total, token_in.decimals),
        amount_symbol=request.amount_symbol,
        source_chain=source.name,
        destination_chain=destination.name,
        token_in=token_in_address,
        token_out=token_out_address,
        token_out_decimals=token_out.decimals,
        asset_token_symbol=token_in.symbol,
        asset_token_decimals=token_in.decimals,
        total_due=total,
        fees_in_asset=0,
        app_fee_in_asset=0,
        amount_out=rescale(total, token_in.decimals, token_out.decimals),
        fees_in_usd=Decimal(0),
        app_fee_in_usd=Decimal(0),
        total_in_usd=usd if token_in.category == "stablecoin" else None,
        slippage=Decimal(0),
        recipient=_required(_address(request.recipient, "recipient")),
        refund_address=_required(_address(request.refund_address, "refund_address")),
        coordinator=source.coordinator.lower(),
        bridger=source.bridger.lower(),
        metadata=metadata,
        expires_at=now + timedelta(seconds=expires_in),
    )


def _required(value: str | None) -> str:
    assert value is not None
    return value


async def create_intent(
    pool: Pool,
    settings: Settings,
    keys: IntentKeys,
    request: IntentRequest,
    *,
    client_id: UUID,
    now: datetime,
    idempotency_key: str | None = None,
) -> IntentRow:
    """Create the intent, or return the one this client made with ``idempotency_key``."""
    new = plan_intent(
        settings, request, client_id=client_id, now=now, idempotency_key=idempotency_key
    )
    async with pool.acquire() as conn:
        if idempotency_key is not None:
            existing = await _existing(conn, new)
            if existing is not None:
                return existing
        async with conn.transaction():
            index = await intent_store.next_address_index(conn)
            address = keys.address(index).lower()
            row = await intent_store.insert_intent(
                conn, new, address_index=index, intent_address=address
            )
        if row is None:  # a concurrent request with the same key won the race
            existing = await _existing(conn, new)
            assert existing is not None
            return existing
        return row


async def _existing(conn: intent_store.Connection, new: intent_store.NewIntent) -> IntentRow | None:
    assert new.idempotency_key is not None
    found = await intent_store.find_by_idempotency_key(conn, new.client_id, new.idempotency_key)
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
