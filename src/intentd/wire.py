"""The wire (:mod:`intentd.messages`) and the domain: every conversion between them.

Messages are validated where they are decoded; here they become the domain's values
(:mod:`intentd.domain.deposits`, :mod:`intentd.domain.action_results`) and back. A
transfer decoded by the indexer (``chain.evm.decoding.Deposit``, what a
:class:`~intentd.messages.DepositMessage` carries) becomes a domain deposit here too,
for the callers that credit it without a message (trigger-processing and its
verifier). Pure.
"""

from __future__ import annotations

from datetime import UTC, datetime

from intentd.chain.transfers import ChainTransfer
from intentd.domain.action_results import ActionResult, ResultEvent
from intentd.domain.deposits import Deposit, Retraction
from intentd.domain.intent import ActionKind
from intentd.messages import ActionResultMessage, DepositMessage, RetractionMessage

__all__ = ["action_result", "deposit", "found_deposit", "retraction"]


def deposit(message: DepositMessage) -> Deposit:
    return found_deposit(message.chain, message)


def found_deposit(chain: str, found: ChainTransfer | DepositMessage) -> Deposit:
    """The deposit of a transfer seen on ``chain`` (decoded, or in a message)."""
    return Deposit(
        chain=chain,
        tx_hash=found.tx_hash,
        log_index=found.log_index,
        block_number=found.block_number,
        block_hash=found.block_hash,
        block_time=datetime.fromtimestamp(found.block_time, UTC),
        token=found.token,
        from_address=found.from_address,
        to_address=found.to_address,
        amount=found.amount,
        transfer_index=found.transfer_index,
    )


def retraction(message: RetractionMessage) -> Retraction:
    return Retraction(
        chain=message.chain,
        tx_hash=message.tx_hash,
        log_index=message.log_index,
        block_number=message.block_number,
        block_hash=message.block_hash,
        to_address=message.to_address,
        token=message.token,
        transfer_index=message.transfer_index,
    )


def action_result(message: ActionResultMessage) -> ActionResult:
    return ActionResult(
        id=message.id,
        action_id=message.action_id,
        intent_id=message.intent_id,
        kind=ActionKind(message.action_kind),
        event=ResultEvent(message.event),
        chain=message.chain,
        tx_hash=message.tx_hash,
        block_number=message.block_number,
        amount_sent=message.amount_sent,
        gas_cost=message.gas_cost,
        error=message.error,
    )
