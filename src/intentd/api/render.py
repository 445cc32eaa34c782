"""JSON shapes of quotes, tokens and trigger results (the intent record is
``contract.record.render_record``); the models in ``api.models`` document them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from eth_utils import to_checksum_address

from intentd.contract.record import render_record
from intentd.domain.amounts import format_amount
from intentd.intents.quotes import Quote
from intentd.intents.slippage import SlippageLimit, slippage_limit
from intentd.scanning.trigger import TriggerOutcome
from intentd.settings import NATIVE_TOKEN, ChainConfig, NativeTokenConfig, TokenConfig

__all__ = ["quote_json", "token_json", "tokens_of", "trigger_json"]


def _time(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def _usd(value: Decimal | None) -> str | None:
    if value is None:
        return None
    text = format(value.normalize(), "f")
    return "0" if text in {"-0", "0E-0"} else text


def quote_json(
    quote: Quote, amount: str, amount_symbol: str, *, now: datetime, ttl: int
) -> dict[str, Any]:
    """``amount`` and ``amount_symbol`` are the request's (the denomination actually used);
    the quote holds until ``now`` plus ``ttl`` seconds, or sooner (``Quote.valid_until``)."""
    path, fees = quote.route, quote.fees
    return {
        "source_chain": path.source.name,
        "destination_chain": path.destination.name,
        "tokenIn": to_checksum_address(path.token_in_address),
        "tokenOut": to_checksum_address(path.token_out_address),
        "bridge": quote.bridge.name,
        "estimated_seconds": quote.bridge.estimated_seconds,
        "amount": amount,
        "amountSymbol": amount_symbol,
        "asset_token_symbol": path.token_in.symbol,
        "asset_token_decimals": path.token_in.decimals,
        "initialAmount": quote.asset(fees.amount),
        "fees_in_asset_token": quote.asset(fees.route_fee),
        "app_fee_in_asset_token": quote.asset(fees.app_fee),
        "total_amount_in_asset_token": quote.asset(fees.total),
        "fees_in_usd": _usd(quote.fees_in_usd),
        "app_fee_in_usd": _usd(quote.app_fee_in_usd),
        "total_amount_in_usd": _usd(quote.total_in_usd),
        "amount_out": format_amount(quote.amount_out, path.token_out.decimals),
        "token_out_symbol": path.token_out.symbol,
        "token_out_decimals": path.token_out.decimals,
        "slippage": _usd(quote.slippage),
        "slippage_limit": _limit(slippage_limit(quote)),
        "prices": [
            {
                "symbol": symbol,
                "usd": _usd(price.usd),
                "source": price.source,
                "feed": price.feed,
                "round_id": None if price.round_id is None else str(price.round_id),
                "updated_at": None if price.updated_at is None else _time(price.updated_at),
                "feed_usd": _usd(price.observed),
            }
            for symbol, price in quote.prices
        ],
        "valid_until": _time(quote.valid_until(now, ttl)),
    }


def _limit(limit: SlippageLimit | None) -> dict[str, str] | None:
    if limit is None:
        return None
    direction = "below" if limit.below else "above"
    return {"symbol": limit.symbol, "usd": _usd(limit.usd) or "0", "direction": direction}


def token_json(
    chain: ChainConfig, address: str, token: TokenConfig | NativeTokenConfig
) -> dict[str, Any]:
    return {
        "symbol": token.symbol,
        "decimals": token.decimals,
        "name": token.name,
        "category": token.category,
        "chain": chain.name,
        "chain_id": chain.chain_id,
        "network": chain.network,
        "address": to_checksum_address(address),
    }


def tokens_of(chains: Iterable[ChainConfig]) -> list[dict[str, Any]]:
    """Every supported token of ``chains``: the native coin first, then the ERC-20s."""
    found = []
    for chain in chains:
        found.append(token_json(chain, NATIVE_TOKEN, chain.native))
        found.extend(token_json(chain, token.address, token) for token in chain.tokens)
    return found


def trigger_json(outcome: TriggerOutcome, chains: dict[str, ChainConfig]) -> dict[str, Any]:
    row = outcome.intent
    deposits = []
    for recorded in outcome.deposits:
        deposit = recorded.deposit
        chain = chains.get(deposit.chain)
        token = chain.token(deposit.token) if chain is not None else None
        deposits.append(
            {
                "chain": deposit.chain,
                "tx_hash": deposit.tx_hash,
                "log_index": deposit.log_index,
                "block_number": deposit.block_number,
                "token": to_checksum_address(deposit.token),
                "from": to_checksum_address(deposit.from_address),
                "amount": format_amount(deposit.amount, token.decimals) if token else None,
                "amount_base_units": str(deposit.amount),
                "disposition": recorded.disposition.value,
                "reason": recorded.reason.value if recorded.reason is not None else None,
                "new": recorded.key in outcome.new,
            }
        )
    answer: dict[str, Any] = {
        "intent": render_record(row),
        "deposits": deposits,
        "balance": None,
        "scan": None,
    }
    if outcome.balance is not None and outcome.balance_block is not None:
        answer["balance"] = {
            "token": to_checksum_address(row.token_in),
            "amount": format_amount(outcome.balance, row.asset_token_decimals),
            "block_number": outcome.balance_block,
        }
    if outcome.progress is not None and outcome.confirmed_head is not None:
        answer["scan"] = {
            "chain": row.source_chain,
            "first_block": outcome.progress.first_block,
            "scanned_to": outcome.progress.scanned_to,
            "confirmed_head": outcome.confirmed_head,
            "complete": outcome.progress.scanned_to >= outcome.confirmed_head,
        }
    return answer
