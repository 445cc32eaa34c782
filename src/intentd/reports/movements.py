"""One row per money movement: what the exports hold, defined once.

Pure: no I/O. A :class:`Movement` is one transfer that moved money for an intent of the
merchant: a deposit to its address, the relayer's payment to the recipient, the
relayer's repayment, a refund, a fee sweep, the gas a transaction of ours burned, a gas
top-up. Each export (:class:`Export`) is the movements of some kinds over a date range;
every export has the same columns (:data:`COLUMNS`), so exports can be joined or merged.

Figures: ``amount_base_units`` is an integer in the token's base units;
``amount`` the same in whole units (an exact decimal; empty when the token is not in the
configuration); ``usd`` its value at the intent's quote (below); addresses and hashes are
lowercase hex, as stored (explorers accept them); ``at`` is ISO 8601 UTC.

``at``: a deposit's block time; for a transaction of ours, when intentd recorded it
final (mined at the chain's confirmation depth): seconds after its block.

USD at the intent's quote: the intent fixed ``total_amount_in_usd`` for
``total_amount_in_asset_token`` when it was created. A movement of ``tokenIn`` on the
source chain is valued at that rate; one of ``tokenOut`` on the destination chain at the
rate of ``amount_out`` to the quote's amount less its fees. Anything else (another
token, gas in the native coin of a token intent) has no quote: ``usd`` is empty. Rounded
half to even to a millionth of a dollar, computed in integers (no floats).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum

from intentd.contract.mode import mode_of
from intentd.domain.amounts import format_amount
from intentd.reports.ranges import iso_utc
from intentd.settings import ChainConfig, Settings

__all__ = [
    "COLUMNS",
    "EXPORT_KINDS",
    "Export",
    "GasFigures",
    "IntentRef",
    "Movement",
    "MovementKind",
    "TokenBook",
    "render_row",
    "usd_at_quote",
]


class MovementKind(StrEnum):
    DEPOSIT = "deposit"
    """A transfer to the intent address (credited, refund owed, or retained as dust)."""
    PAYMENT = "payment"
    """The relayer paid the recipient on the destination chain (the prefill)."""
    RELAYER_REPAYMENT = "relayer_repayment"
    """The intent address repaid the relayer on the source chain."""
    REFUND = "refund"
    """The intent address paid back to the refund address (``reason`` says why)."""
    FEE = "fee"
    """The intent address swept the fees to the chain's fee account."""
    GAS = "gas"
    """What a mined transaction of ours burned (gas used x price, plus an L1 data fee)."""
    GAS_TOPUP = "gas_topup"
    """The gas tank's coin sent to an intent address to pay for a token transfer."""


class Export(StrEnum):
    """The exports, by the name of their route (``GET /api/v1/reports/<name>``)."""

    PAYMENTS = "payments"
    DEPOSITS = "deposits"
    REFUNDS = "refunds"
    FEES = "fees"
    GAS = "gas"


EXPORT_KINDS: dict[Export, tuple[MovementKind, ...]] = {
    Export.PAYMENTS: (MovementKind.PAYMENT, MovementKind.RELAYER_REPAYMENT),
    Export.DEPOSITS: (MovementKind.DEPOSIT,),
    Export.REFUNDS: (MovementKind.REFUND,),
    Export.FEES: (MovementKind.FEE,),
    Export.GAS: (MovementKind.GAS, MovementKind.GAS_TOPUP),
}

COLUMNS = (
    "kind",
    "at",
    "intent_id",
    "intent_address",
    "mode",
    "chain",
    "token",
    "symbol",
    "decimals",
    "from_address",
    "to_address",
    "amount_base_units",
    "amount",
    "usd",
    "reason",
    "tx_hash",
    "block_number",
    "explorer_url",
    "gas_used",
    "effective_gas_price",
    "l1_fee",
    "metadata",
)
"""Every export's header, in order."""


@dataclass(frozen=True, slots=True)
class IntentRef:
    """What a row needs of its intent (addresses and tokens lowercase)."""

    id: int
    address: str
    source_chain: str
    destination_chain: str
    token_in: str
    token_out: str
    token_in_symbol: str
    token_in_decimals: int
    token_out_decimals: int
    total_due: int
    amount_out: int
    total_in_usd: Decimal | None
    fees_in_usd: Decimal
    """Route fee and application fee together."""
    metadata: str
    """The merchant's metadata as JSON text."""


@dataclass(frozen=True, slots=True)
class GasFigures:
    gas_used: int
    effective_gas_price: int
    l1_fee: int


@dataclass(frozen=True, slots=True)
class Movement:
    kind: MovementKind
    at: datetime
    intent: IntentRef
    chain: str
    token: str
    from_address: str
    to_address: str
    amount: int
    """Base units of ``token`` that reached ``to_address`` (for gas: burned)."""
    reason: str
    tx_hash: str
    block_number: int | None
    gas: GasFigures | None = None


class TokenBook:
    """Symbols, decimals, modes and explorer links from the configuration (cached)."""

    def __init__(self, settings: Settings) -> None:
        self._chains: dict[str, ChainConfig] = dict(settings.chains)
        self._tokens: dict[tuple[str, str], tuple[str, int] | None] = {}

    def token(self, chain: str, token: str) -> tuple[str, int] | None:
        """(symbol, decimals) of a configured token, else None."""
        key = (chain, token)
        if key not in self._tokens:
            config = self._chains.get(chain)
            found = config.token(token) if config is not None else None
            self._tokens[key] = (found.symbol, found.decimals) if found is not None else None
        return self._tokens[key]

    def mode(self, chain: str) -> str:
        config = self._chains.get(chain)
        return mode_of(config.network) if config is not None else ""

    def tx_url(self, chain: str, tx_hash: str) -> str:
        """``<explorer_url>/tx/<hash>``, or "" without an explorer (or a hash)."""
        config = self._chains.get(chain)
        if config is None or not config.explorer_url or not tx_hash:
            return ""
        return f"{config.explorer_url}/tx/{tx_hash}"


def _token_of(book: TokenBook, movement: Movement) -> tuple[str, int] | None:
    intent = movement.intent
    found = book.token(movement.chain, movement.token)
    if found is None and (movement.chain, movement.token) == (intent.source_chain, intent.token_in):
        return intent.token_in_symbol, intent.token_in_decimals
    return found


def render_row(movement: Movement, book: TokenBook) -> list[str]:
    """The cells of ``movement`` in :data:`COLUMNS` order."""
    intent = movement.intent
    token = _token_of(book, movement)
    symbol, decimals = token if token is not None else ("", None)
    gas = movement.gas
    return [
        movement.kind.value,
        iso_utc(movement.at),
        str(intent.id),
        intent.address,
        book.mode(intent.source_chain),
        movement.chain,
        movement.token,
        symbol,
        "" if decimals is None else str(decimals),
        movement.from_address,
        movement.to_address,
        str(movement.amount),
        "" if decimals is None else format_amount(movement.amount, decimals),
        usd_at_quote(intent, movement.chain, movement.token, movement.amount),
        movement.reason,
        movement.tx_hash,
        "" if movement.block_number is None else str(movement.block_number),
        book.tx_url(movement.chain, movement.tx_hash),
        "" if gas is None else str(gas.gas_used),
        "" if gas is None else str(gas.effective_gas_price),
        "" if gas is None else str(gas.l1_fee),
        "" if intent.metadata == "{}" else intent.metadata,
    ]


def usd_at_quote(intent: IntentRef, chain: str, token: str, amount: int) -> str:
    """USD of ``amount`` base units of ``token`` on ``chain`` at the intent's quote, to a
    millionth of a dollar (half to even); "" when the quote says nothing about it."""
    if intent.total_in_usd is None:
        return ""
    if (chain, token) == (intent.source_chain, intent.token_in):
        usd, units = intent.total_in_usd, intent.total_due
    elif (chain, token) == (intent.destination_chain, intent.token_out) and intent.amount_out:
        usd, units = intent.total_in_usd - intent.fees_in_usd, intent.amount_out
    else:
        return ""
    sign, digits, exponent = usd.as_tuple()
    if sign or not isinstance(exponent, int) or units <= 0:
        return ""
    mantissa = int("".join(map(str, digits)) or "0")
    # amount * usd / units in millionths: usd = mantissa * 10^exponent
    numerator, denominator = amount * mantissa * 10**6, units
    if exponent >= 0:
        numerator *= 10**exponent
    else:
        denominator *= 10 ** (-exponent)
    return _micros(_divide_half_even(numerator, denominator))


def _divide_half_even(numerator: int, denominator: int) -> int:
    quotient, remainder = divmod(numerator, denominator)
    twice = 2 * remainder
    if twice > denominator or (twice == denominator and quotient % 2):
        quotient += 1
    return quotient


def _micros(value: int) -> str:
    whole, fraction = divmod(value, 10**6)
    digits = f"{fraction:06d}".rstrip("0").ljust(2, "0")
    return f"{whole}.{digits}"
