"""Rows of the ``deposits`` table and the domain's deposits: every conversion between them.

:data:`RECORDED` selects what :func:`recorded` turns into a
:class:`~intentd.domain.deposits.RecordedDeposit` (``FROM deposits d``, aliased ``d``),
so every reader of the table (the lifecycle, trigger-processing, its verifier) gets
the same value type. Pure; the queries live with their callers.
"""

from __future__ import annotations

import json
from typing import Any

from intentd.domain.deposits import Deposit, Disposition, RecordedDeposit
from intentd.domain.intent import RefundReason
from intentd.domain.valuation import Rate

__all__ = ["RECORDED", "deposit_values", "rate_json", "recorded"]

RECORDED = (
    "d.id, d.chain, d.tx_hash, d.log_index, d.block_number, d.block_hash, d.block_time,"
    " d.token, d.from_address, d.to_address, d.amount, d.transfer_index, d.intent_id,"
    " d.disposition, d.reason, d.orphaned_at IS NOT NULL AS orphaned, d.valuation"
)
"""The columns :func:`recorded` reads, of ``deposits d``."""


def recorded(record: Any) -> RecordedDeposit:
    """The recorded deposit of a row selected with :data:`RECORDED`."""
    reason = record["reason"]
    return RecordedDeposit(
        id=record["id"],
        deposit=Deposit(
            chain=record["chain"],
            tx_hash=record["tx_hash"],
            log_index=record["log_index"],
            block_number=record["block_number"],
            block_hash=record["block_hash"],
            block_time=record["block_time"],
            token=record["token"],
            from_address=record["from_address"],
            to_address=record["to_address"],
            amount=int(record["amount"]),
            transfer_index=record["transfer_index"],
        ),
        intent_id=record["intent_id"],
        disposition=Disposition(record["disposition"]),
        reason=RefundReason(reason) if reason is not None else None,
        orphaned=record["orphaned"],
        rate=_rate(record["valuation"]),
    )


def _rate(stored: Any) -> Rate | None:
    if stored is None:
        return None
    return Rate.of_json(json.loads(stored) if isinstance(stored, str | bytes) else stored)


def rate_json(rate: Rate | None) -> str | None:
    """A credit's rate as the ``valuation`` column stores it."""
    return None if rate is None else json.dumps(rate.as_json())


def deposit_values(deposit: Deposit) -> tuple[Any, ...]:
    """``(chain, tx_hash, log_index, block_number, block_hash, block_time, token,
    from_address, to_address, amount, transfer_index)``: the columns of a new row."""
    return (
        deposit.chain,
        deposit.tx_hash,
        deposit.log_index,
        deposit.block_number,
        deposit.block_hash,
        deposit.block_time,
        deposit.token,
        deposit.from_address,
        deposit.to_address,
        deposit.amount,
        deposit.transfer_index,
    )
