"""The messages the poller publishes for deposits and retractions (pure).

:func:`deposit_payload` is the hot path of a backfill: it writes the JSON of a
:class:`~intentd.messages.DepositMessage` straight from a decoded :class:`ChainTransfer`,
without building and validating the pydantic model (about 20 µs a deposit). Its
output is byte for byte ``encode(deposit_message(...))``, which the unit tests check;
the decoded fields already have the message's shapes (lowercase hex, integers).
"""

from __future__ import annotations

import orjson

from intentd.chain.transfers import ChainTransfer
from intentd.indexer.reorg import PublishedDeposit
from intentd.messages import DepositMessage, RetractionMessage, deposit_id

__all__ = ["deposit_message", "deposit_payload", "published", "retraction_message"]


def deposit_message(
    chain: str, chain_id: int, deposit: ChainTransfer, observed_at_ms: int
) -> DepositMessage:
    """The validated message of ``deposit`` (see :func:`deposit_payload` for its bytes)."""
    return DepositMessage(
        id=deposit_id(chain, deposit.tx_hash, deposit.token, deposit.transfer_index),
        chain=chain,
        chain_id=chain_id,
        tx_hash=deposit.tx_hash,
        log_index=deposit.log_index,
        transfer_index=deposit.transfer_index,
        block_number=deposit.block_number,
        block_hash=deposit.block_hash,
        block_time=deposit.block_time,
        token=deposit.token,
        from_address=deposit.from_address,
        to_address=deposit.to_address,
        amount=deposit.amount,
        observed_at_ms=observed_at_ms,
    )


def deposit_payload(
    chain: str, chain_id: int, deposit: ChainTransfer, observed_at_ms: int
) -> bytes:
    """``messages.encode(deposit_message(chain, chain_id, deposit, observed_at_ms))``, fast."""
    return orjson.dumps(
        {
            "kind": "deposit",
            "id": deposit_id(chain, deposit.tx_hash, deposit.token, deposit.transfer_index),
            "chain": chain,
            "chain_id": chain_id,
            "tx_hash": deposit.tx_hash,
            "log_index": deposit.log_index,
            "transfer_index": deposit.transfer_index,
            "block_number": deposit.block_number,
            "block_hash": deposit.block_hash,
            "block_time": deposit.block_time,
            "token": deposit.token,
            "from_address": deposit.from_address,
            "to_address": deposit.to_address,
            "amount": str(deposit.amount),
            "observed_at_ms": observed_at_ms,
        }
    )


def retraction_message(chain: str, orphan: PublishedDeposit) -> RetractionMessage:
    """The retraction of ``orphan``; its id is the deposit's id (one transfer, one identity)."""
    if orphan.token is None or orphan.transfer_index is None:  # published before identities
        ident = f"{chain}:{orphan.tx_hash}:{orphan.log_index}"
    else:
        ident = deposit_id(chain, orphan.tx_hash, orphan.token, orphan.transfer_index)
    return RetractionMessage(
        id=ident,
        chain=chain,
        tx_hash=orphan.tx_hash,
        log_index=orphan.log_index,
        block_number=orphan.block_number,
        block_hash=orphan.block_hash,
        to_address=orphan.intent_address,
        token=orphan.token,
        transfer_index=orphan.transfer_index,
    )


def published(deposit: ChainTransfer) -> PublishedDeposit:
    """How a published deposit is remembered for a later retraction."""
    return PublishedDeposit(
        deposit.block_number,
        deposit.block_hash,
        deposit.tx_hash,
        deposit.log_index,
        deposit.to_address,
        deposit.token,
        deposit.transfer_index,
        deposit.amount,
    )
