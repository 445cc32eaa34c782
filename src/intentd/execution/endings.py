"""How an attempt or an action ends, and the result that reports it.

Guarantees:

- A failed attempt (reverted, gas estimate reverted, nonce taken by another
  transaction) sends the action back to ``ready`` with backoff, or, when the retry
  policy gives up, to ``failed`` with the ``failed`` result in the outbox, in the
  caller's store transaction (so the result and the status change commit together).
- Results carry the stable id ``action:<id>:<event>`` (``messages.action_result_id``).
"""

from __future__ import annotations

from typing import Any

import structlog

from intentd import observability as metrics
from intentd.domain.actions import Action, ResultEvent
from intentd.execution.gas import gas_cost
from intentd.execution.policy import GiveUp, RetryPolicy, after_failure
from intentd.execution.ports import StoreTransaction
from intentd.execution.tracking import Receipt, Tx
from intentd.messages import ActionResultMessage, action_result_id

__all__ = ["failed_attempt", "result_message", "transfer_figures"]

log = structlog.get_logger()


def result_message(action: Action, event: ResultEvent, **fields: Any) -> ActionResultMessage:
    return ActionResultMessage(
        id=action_result_id(action.id, event.value),
        action_id=action.id,
        intent_id=action.intent_id,
        action_kind=action.kind.value,
        event=event.value,
        chain=action.chain,
        **fields,
    )


def transfer_figures(action: Action, winner: Tx, receipt: Receipt) -> tuple[int, int]:
    """(``amount_sent``, ``gas_cost``) of the action's final transfer ``winner``."""
    amount_sent = winner.value if action.native else action.amount
    return amount_sent, gas_cost(receipt.gas_used, receipt.effective_gas_price, receipt.l1_fee)


async def failed_attempt(
    work: StoreTransaction, action: Action, error: str, *, policy: RetryPolicy, chain: str
) -> None:
    """Record a failed attempt of ``action`` (locked by the caller): retry, or give up."""
    decision = after_failure(action.attempts, policy)
    if isinstance(decision, GiveUp):
        if await work.actions.fail(action.id, attempts=decision.attempts, error=error):
            await work.results.add(result_message(action, ResultEvent.FAILED, error=error))
            metrics.ACTION_OUTCOMES.labels(chain, action.kind, "failed").inc()
            log.error("action failed", error=error, attempts=decision.attempts)
        return
    await work.actions.retry(
        action.id, attempts=decision.attempts, delay=decision.delay, error=error
    )
    metrics.ACTION_OUTCOMES.labels(chain, action.kind, "retried").inc()
    log.warning(
        "attempt failed; retrying",
        error=error,
        attempts=decision.attempts,
        delay=decision.delay,
    )
