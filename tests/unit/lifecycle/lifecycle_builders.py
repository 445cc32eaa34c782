"""Builders of what the lifecycle's tests feed in: settings, a chain book, intent rows,
deposits, retractions and action results, with the constants they share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from intentd.contract.record import IntentRow
from intentd.domain.action_results import ActionResult, ResultEvent
from intentd.domain.deposits import Deposit, Retraction
from intentd.domain.intent import ActionKind
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.lifecycle.chain_book import BookedChain, BookedToken, ChainBook
from intentd.settings import Settings

SOURCE, DESTINATION = "SRC", "DST"
USDC = "0x" + "a" * 40
USDT = "0x" + "b" * 40
ROGUE = "0x" + "c" * 40
RELAYER = "0x" + "1" * 40
FEE_ACCOUNT = "0x" + "2" * 40
REFUND_TO = "0x" + "3" * 40
RECIPIENT = "0x" + "4" * 40
PAYER = "0x" + "9" * 40
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
EXPIRES = NOW + timedelta(minutes=30)
TOPIC = "t.intent-events"


def address(n: int) -> str:
    return f"0x{n:040x}"


def tx(n: int) -> str:
    return f"0x{n:064x}"


def block(n: int, branch: int = 0) -> str:
    return f"0x{branch:032x}{n:032x}"


def settings(*, prefix: str = "unit", token: str = USDC, confirmations: int = 1) -> Settings:
    """SOURCE (chain id 1) and DESTINATION (2), each with the stablecoin ``token``."""
    stablecoin = {"address": token, "symbol": "USDC", "name": "USDC", "decimals": 6,
                  "category": "stablecoin"}  # fmt: skip
    chain = {"network": "test", "rpc_urls": ["http://a"], "relayer": RELAYER,
             "tokens": [stablecoin], "confirmations": confirmations}  # fmt: skip
    return Settings.model_validate(
        {
            "database": {"url": "postgresql://x/y"},
            "kafka": {"bootstrap_servers": "k:1", "topic_prefix": prefix},
            "chains": {SOURCE: {**chain, "chain_id": 1}, DESTINATION: {**chain, "chain_id": 2}},
        }
    )


def book(*, fee_account: str = FEE_ACCOUNT, min_sweep: int = 0) -> ChainBook:
    """USDC (6 decimals) and USDT on both chains; ``min_sweep`` in base units."""
    tokens = {USDC: BookedToken(6, min_sweep), USDT: BookedToken(6, min_sweep)}
    return ChainBook(
        events_topic=TOPIC,
        chains={
            SOURCE: BookedChain(1, RELAYER, fee_account, tokens),
            DESTINATION: BookedChain(2, RELAYER, fee_account, tokens),
        },
    )


def intent_row(
    intent_id: int = 1,
    *,
    total_due: int = 1_000,
    fees: int = 10,
    status: IntentStatus = IntentStatus.PENDING,
    expires_at: datetime = EXPIRES,
) -> IntentRow:
    return IntentRow(
        id=intent_id, client_id=UUID(int=1), sender=None, initial_amount="0.001",
        amount_symbol="USDC", source_chain=SOURCE, destination_chain=DESTINATION,
        token_in=USDC, token_out=USDC, token_out_decimals=6, asset_token_symbol="USDC",
        asset_token_decimals=6, total_due=total_due, fees_in_asset=fees, app_fee_in_asset=0,
        amount_out=total_due - fees, fees_in_usd=Decimal(0), app_fee_in_usd=Decimal(0),
        total_in_usd=None, slippage=Decimal(0), address_index=intent_id,
        intent_address=address(0x1000 + intent_id), recipient=RECIPIENT,
        refund_address=REFUND_TO, relayer="", coordinator=address(0xC0), bridger=address(0xB0),
        bridge_extra_data="0x", status=status, funding_status=FundingStatus.NONE, received=0,
        tx_hash=None, needs_relay=False, event_sequence=0, version=0, metadata={},
        expires_at=expires_at, created_at=NOW - timedelta(minutes=1), updated_at=NOW,
    )  # fmt: skip


def deposit(
    to: str,
    amount: int,
    *,
    n: int = 1,
    token: str = USDC,
    chain: str = SOURCE,
    branch: int = 0,
    block_number: int | None = None,
    log_index: int | None = None,
    transfer_index: int | None = 0,
    block_time: datetime = NOW,
) -> Deposit:
    """Deposit number ``n`` (its transaction ``tx(n)``), seen on ``branch``."""
    number = n if block_number is None else block_number
    return Deposit(
        chain=chain, tx_hash=tx(n), log_index=n if log_index is None else log_index,
        block_number=number, block_hash=block(number, branch), block_time=block_time,
        token=token, from_address=PAYER, to_address=to, amount=amount,
        transfer_index=transfer_index,
    )  # fmt: skip


def retraction_of(seen: Deposit) -> Retraction:
    return Retraction(
        chain=seen.chain, tx_hash=seen.tx_hash, log_index=seen.log_index,
        block_number=seen.block_number, block_hash=seen.block_hash, to_address=seen.to_address,
        token=seen.token, transfer_index=seen.transfer_index,
    )  # fmt: skip


def result(
    action_id: int,
    intent_id: int,
    kind: ActionKind,
    event: ResultEvent,
    *,
    chain: str = DESTINATION,
    tx_hash: str | None = None,
    **figures: Any,
) -> ActionResult:
    return ActionResult(
        id=f"action:{action_id}:{event.value}", action_id=action_id, intent_id=intent_id,
        kind=kind, event=event, chain=chain,
        tx_hash=tx_hash if tx_hash is not None or event is ResultEvent.FAILED else tx(9000),
        **figures,
    )  # fmt: skip
