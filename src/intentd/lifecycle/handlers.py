"""Applying action results and expiry to intents: one transaction each; load, decide, save.

Deposits are credited by :mod:`intentd.lifecycle.crediting` and retracted by
:mod:`intentd.lifecycle.retractions`; this module moves an intent on from what became
of one of its actions (:func:`apply_action_result`) and ends it on time
(:func:`expire`). Each handler takes a domain input, a unit of work
(:class:`~intentd.lifecycle.ports.UnitOfWork`) and the chain book.

An action result is applied once: its ``id`` is remembered (``applied_results``)
under the intent's row lock, so a result delivered twice (redelivery after a crash
between the database commit and the offset commit) changes nothing the second time.
The intent, the actions it decided and the events it emitted commit together.
"""

from __future__ import annotations

from datetime import datetime

import structlog

from intentd import observability as metrics
from intentd.domain.action_results import ActionResult, ResultEvent
from intentd.domain.intent import ActionKind, Intent
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.outcomes import Outcome, Unappliable
from intentd.lifecycle.ports import UnitOfWork
from intentd.lifecycle.saving import load, save

__all__ = ["apply_action_result", "expire"]

log = structlog.get_logger()


async def apply_action_result(
    uow: UnitOfWork, book: ChainBook, result: ActionResult, *, now: datetime
) -> Outcome:
    """Move the intent on from what became of one of its actions."""
    async with uow.transaction():
        row = await uow.intents.lock(result.intent_id)
        if row is None or not await uow.actions.mark_result_applied(result.id):
            return Outcome.DUPLICATE
        intent = load(book, row)
        if result.kind is ActionKind.PREFILL:
            _prefill_result(book, intent, result)
            if row.status is not IntentStatus.COMPLETED and intent.status is IntentStatus.COMPLETED:
                waited = await uow.actions.age(result.action_id)
                metrics.FUNDED_TO_COMPLETED.labels(result.chain).observe(waited)
        elif result.kind is ActionKind.USER_REFUND and result.event is ResultEvent.CONFIRMED:
            refunded = await uow.actions.refund(result.action_id)
            if refunded is None or refunded.reason is None:
                raise Unappliable(
                    f"result {result.id}: action {result.action_id} is not a user refund"
                    " with a reason"
                )
            intent.refund_confirmed(
                reason=refunded.reason,
                chain=result.chain,
                token=refunded.token,
                amount=refunded.amount,
                amount_sent=result.amount_sent or 0,
                gas_cost=result.gas_cost or 0,
                tx_hash=result.tx_hash or "",
            )
        elif result.event is ResultEvent.FAILED:
            metrics.ACTION_ALERTS.labels(result.kind.value).inc()
            log.error(
                "an action failed for good; operator action needed",
                intent_id=row.id,
                action_id=result.action_id,
                kind=result.kind.value,
                error=result.error,
            )
        await save(uow, book, row, intent, now=now)
        return Outcome.APPLIED


def _prefill_result(book: ChainBook, intent: Intent, result: ActionResult) -> None:
    if result.event is ResultEvent.SENT:
        if intent.status is IntentStatus.FUNDED:
            relayer = book.relayer(intent.terms.destination_chain)
            intent.prefill_sent(tx_hash=result.tx_hash or "", relayer=relayer)
    elif result.event is ResultEvent.CONFIRMED:
        if intent.status is IntentStatus.FUNDED:  # "sent" not seen yet: both at once
            relayer = book.relayer(intent.terms.destination_chain)
            intent.prefill_sent(tx_hash=result.tx_hash or "", relayer=relayer)
        fee_account = book.fee_account(intent.terms.source_chain)
        intent.prefill_confirmed(block_number=result.block_number or 0, fee_account=fee_account)
    elif intent.status in (IntentStatus.FUNDED, IntentStatus.INITIATED):
        intent.prefill_failed()


async def expire(
    uow: UnitOfWork,
    book: ChainBook,
    intent_id: int,
    *,
    now: datetime,
    due_by: datetime | None = None,
) -> Outcome:
    """Expire one intent if it is still PENDING with ``expires_at`` at ``due_by`` (the
    expiry loop passes ``now`` less the expiry grace; default ``now``) or before."""
    async with uow.transaction():
        row = await uow.intents.lock(intent_id)
        if row is None:
            return Outcome.NOT_DUE
        intent = load(book, row)
        if not intent.expire(now if due_by is None else due_by):
            return Outcome.NOT_DUE
        await save(uow, book, row, intent, now=now)
        log.info(
            "intent expired",
            intent_id=intent_id,
            intent_status=intent.status.value,
            received=intent.received,
        )
        return Outcome.EXPIRED
