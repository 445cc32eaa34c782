"""Request and response shapes of the API (pydantic), which the OpenAPI document shows.

Request bodies are validated strictly (no type coercion, no unknown fields); strings
may not hold NUL characters. Values are then checked by the intent and quote code,
whose failures carry their own codes (``unknown_chain``, ``invalid_address``, ...).
Response models document what the handlers render; the handlers build the JSON
themselves, and the tests check the two agree. The intent record and the event
envelope are the public contract's (:mod:`intentd.contract`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from intentd.contract.record import IntentRecord

__all__ = [
    "Balance",
    "FoundDeposit",
    "IntentCreate",
    "Problem",
    "Quote",
    "QuoteList",
    "ScanWindow",
    "SessionCreate",
    "SessionCreated",
    "SessionInfo",
    "SessionIntentCreate",
    "TokenRecord",
    "TriggerResult",
]

_MAX_DEPTH = 32


def _text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


def _json_object(value: dict[str, Any]) -> dict[str, Any]:
    _check_json(value, 0)
    return value


def _check_json(value: Any, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError(f"nests deeper than {_MAX_DEPTH} levels")
    if isinstance(value, str):
        _text(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _text(key)
            _check_json(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, depth + 1)


Text = Annotated[str, AfterValidator(_text)]
Short = Annotated[str, Field(max_length=128), AfterValidator(_text)]
Address = Annotated[
    str,
    Field(max_length=128, description="EVM address: EIP-55 checksum, or all one case"),
    AfterValidator(_text),
]
Amount = Annotated[
    str,
    Field(max_length=100, description='decimal number as a string, e.g. "12.5"', examples=["12.5"]),
    AfterValidator(_text),
]
ChainName = Annotated[
    str, Field(max_length=64, description="chain name, e.g. BASE_TESTNET"), AfterValidator(_text)
]
Metadata = Annotated[dict[str, Any], AfterValidator(_json_object)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class IntentCreate(_Request):
    """The spec's payment intent request, with our optional extras (docs/api.md)."""

    amount: Amount
    tokenIn: Address  # noqa: N815 - the spec's field names
    source_chain: ChainName
    destination_chain: ChainName
    recipient: Address
    refund_address: Address
    sender: Address | None = None
    amountSymbol: Short | None = None  # noqa: N815
    tokenOut: Address | None = None  # noqa: N815
    metadata: Metadata | None = Field(
        default=None, description="free-form JSON object, at most 16 KiB"
    )
    expires_in: int | None = Field(default=None, description="seconds until expiry")
    bridge: Short | None = Field(
        default=None, description="bridge option (see the quotes); the cheapest by default"
    )
    slippage: Short | None = Field(
        default=None,
        description="for an amount converted at a price (USD, or another priced symbol): the"
        " share of the amount the relayer bears if the price moves against the payer before"
        ' the payment is credited, a fraction such as "0.005" (0.5 %), at most 4 decimals, up'
        " to pricing.slippage.max; default pricing.slippage of tokenIn's category"
        " (docs/pricing.md, Slippage)",
    )


class SessionCreate(_Request):
    """What a merchant backend fixes for one payment-modal session."""

    recipient: Address
    destinationChain: ChainName  # noqa: N815
    token: Address = Field(description="token the recipient gets, on destinationChain")
    amount: Amount | None = Field(
        default=None, description="in whole units of token; empty, 0 or absent: the payer chooses"
    )
    excludeChains: list[ChainName] = Field(  # noqa: N815
        default_factory=list, max_length=64, description="source chains the payer may not use"
    )
    expires_in: int | None = Field(default=None, description="session lifetime in seconds")


class SessionIntentCreate(_Request):
    """What the payer chooses in the modal; the rest comes from the session."""

    source_chain: ChainName
    tokenIn: Address  # noqa: N815
    refund_address: Address
    sender: Address | None = None
    amount: Amount | None = Field(
        default=None, description="required when the session leaves the amount to the payer"
    )


# --- responses (documentation; the handlers render the same shapes) -------------------


class Problem(BaseModel):
    """RFC 9457 problem details, with a stable ``code``."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    instance: str | None = None
    field: str | None = None
    errors: list[dict[str, Any]] | None = None


class QuotePrice(BaseModel):
    """One USD price a quote used, and where it came from."""

    symbol: str
    usd: str = Field(description="USD per whole token (a stablecoin's is its peg, 1)")
    source: Literal["chainlink", "static", "peg"] = Field(
        description="chainlink: on-chain feeds; static: the config's table (test networks);"
        " peg: a stablecoin without a feed"
    )
    feed: str | None = Field(description="CHAIN:0xaddress of the feed whose round was used")
    round_id: str | None = Field(description="that round's id (a decimal string)")
    updated_at: str | None = Field(description="when that round was updated (RFC 3339)")
    feed_usd: str | None = Field(
        description="a stablecoin's feed answer, within pricing.peg_tolerance_bps of 1"
    )


class SlippageLimit(BaseModel):
    symbol: str
    usd: str
    direction: Literal["below", "above"]


class Quote(BaseModel):
    """The cost of one route and bridge option. Amounts are decimal strings; the
    ``*_asset_token`` figures are in ``tokenIn``, ``amount_out`` in ``tokenOut``."""

    source_chain: str
    destination_chain: str
    tokenIn: str  # noqa: N815
    tokenOut: str  # noqa: N815
    bridge: str
    estimated_seconds: int
    amount: str = Field(description="the amount quoted, as requested")
    amountSymbol: str = Field(  # noqa: N815
        description="its denomination; send the same amount and amountSymbol to create the intent"
    )
    asset_token_symbol: str
    asset_token_decimals: int
    initialAmount: str  # noqa: N815
    fees_in_asset_token: str
    app_fee_in_asset_token: str
    total_amount_in_asset_token: str
    fees_in_usd: str
    app_fee_in_usd: str
    total_amount_in_usd: str | None
    amount_out: str
    token_out_symbol: str
    token_out_decimals: int
    slippage: str = Field(
        description='the slippage an intent created from this quote gets (a fraction); "0"'
        " when the amount is not converted at a price (nothing is revalued)"
    )
    slippage_limit: SlippageLimit | None = Field(
        description="what the slippage means for the payer: a payment of exactly"
        " total_amount_in_asset_token covers the intent unless, when it is credited, symbol's"
        " USD price is below (direction below) or above (above) usd; the total is then raised"
        " to the amount's value at that price, and the payer tops up or is refunded at expiry."
        " null when nothing is revalued"
    )
    prices: list[QuotePrice] = Field(
        description="every USD price the quote used: tokenIn's, then amountSymbol's if converted"
    )
    valid_until: str = Field(
        description="the quote's figures hold until then (RFC 3339), unless a feed publishes"
        " a new round first; after it, ask again (docs/pricing.md)"
    )


class QuoteList(BaseModel):
    quotes: list[Quote]


class TokenRecord(BaseModel):
    """A supported token: the spec's fields plus where it lives."""

    symbol: str
    decimals: int
    name: str
    category: Literal["stablecoin", "major", "volatile"]
    chain: str
    chain_id: int
    network: Literal["main", "test"]
    address: str


class FoundDeposit(BaseModel):
    chain: str
    tx_hash: str
    log_index: int
    block_number: int
    token: str
    from_address: str = Field(alias="from")
    amount: str | None = Field(description="in whole units of token; null for unsupported tokens")
    amount_base_units: str
    disposition: Literal["credited", "refund_owed", "ignored", "unmatched", "retracted"]
    reason: str | None
    new: bool = Field(description="true if this call recorded it; false if already known")


class Balance(BaseModel):
    token: str
    amount: str
    block_number: int


class ScanWindow(BaseModel):
    chain: str
    first_block: int
    scanned_to: int
    confirmed_head: int
    complete: bool = Field(description="false: call again to scan the rest of the window")


class TriggerResult(BaseModel):
    intent: IntentRecord
    deposits: list[FoundDeposit]
    balance: Balance | None = Field(
        description="null when the intent is terminal: answered from the store, chain not read"
    )
    scan: ScanWindow | None = Field(
        description="null when the intent is terminal: answered from the store, chain not read"
    )


class SessionInfo(BaseModel):
    session_id: str
    recipient: str
    amount: str | None
    destinationChain: str  # noqa: N815
    token: TokenRecord
    excludeChains: list[str]  # noqa: N815
    expires_at: str


class SessionCreated(SessionInfo):
    session_token: str


class SessionClient(BaseModel):
    """The client a session belongs to, as its payer may see it: no secret, no key."""

    id: str
    name: str
    networks: list[str]
    chains: list[str]
