"""Undoing a deposit whose block a reorg orphaned (one transaction; load, decide, save).

Applied for the pollers' retraction messages and for the trigger verifier's findings,
with a domain :class:`~intentd.domain.deposits.Retraction`. It names the block and
log it retracts from, so a record the same transfer moved to another block since
then is left alone, and applying it twice changes nothing the second time.

While nothing irreversible followed, the deposit is un-credited (a FUNDED intent
falls back to PENDING, its prefill cancelled) or its refund cancelled. If something
did, the deposit is marked orphaned and the intent's spending actions on its chain
are held until the same transfer is seen again (``adapters.postgres.deposit_holds``), instead
of letting a refund spend funds that are, for now, not there; an operator alert.
"""

from __future__ import annotations

from datetime import datetime

import structlog

from intentd import observability as metrics
from intentd.domain.deposits import Disposition, RecordedDeposit, Retraction
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.ports import UnitOfWork
from intentd.lifecycle.saving import load, save

__all__ = ["retract"]

log = structlog.get_logger()


async def retract(
    uow: UnitOfWork, book: ChainBook, retraction: Retraction, *, now: datetime
) -> Outcome:
    """Undo the retracted deposit if nothing irreversible followed; hold and alert if
    something did."""
    async with uow.transaction():
        row = await uow.intents.at(retraction.to_address)
        seen = await uow.deposits.find_published(retraction)
        if seen is None or seen.disposition is Disposition.RETRACTED:
            return Outcome.RETRACTION_NOOP
        if seen.disposition is Disposition.CREDITED:
            assert row is not None
            intent = load(book, row)
            was_funded = intent.status is IntentStatus.FUNDED
            if not intent.retract(seen.deposit):
                return await _hold(uow, retraction, seen, row.status.value)
            if (
                was_funded
                and intent.status is IntentStatus.PENDING
                and not await uow.actions.cancel_prefill(row.id)
            ):
                return await _hold(uow, retraction, seen, "prefill already signed")
            await save(uow, book, row, intent, now=now)
        elif seen.disposition is Disposition.REFUND_OWED and not (
            await uow.actions.cancel_deposit_refund(seen.id)
        ):
            return await _hold(uow, retraction, seen, "refund already signed")
        await uow.deposits.mark_retracted(seen.id)
        log.warning("deposit retracted after reorg", deposit=retraction.label)
        return Outcome.RETRACTED


async def _hold(
    uow: UnitOfWork, retraction: Retraction, seen: RecordedDeposit, state: str
) -> Outcome:
    """A retraction that cannot be undone: hold the intent's spending actions, alert."""
    held = 0
    if seen.intent_id is not None:
        held = await uow.holds.hold(seen.id, seen.intent_id, retraction.chain)
    metrics.UNCREDIT_ALERTS.labels(retraction.chain).inc()
    log.error(
        "reorg removed a deposit that can no longer be undone; the intent's spending"
        " actions are held until it is back on chain (operator alert if it is not)",
        deposit=retraction.label,
        state=state,
        held=held,
    )
    return Outcome.RETRACTION_ALERT
