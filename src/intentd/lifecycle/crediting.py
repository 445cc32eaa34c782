"""Crediting a deposit: the one way a transfer to an intent address changes intent state.

Called by the lifecycle consumer for the pollers' deposit messages, by
trigger-processing for what it finds scanning an intent's window, and by the trigger
verifier for a transfer a reorg moved; all with a domain
:class:`~intentd.domain.deposits.Deposit`, a unit of work and the chain book.

One transaction each: load, decide with the domain, save. A deposit is unique on its
identity ``(chain, tx_hash, token, transfer_index)``, the same on every fork (a
transfer re-mined elsewhere is the same deposit, its new block recorded), checked
under the intent's row lock, so a deposit credited twice (redelivery, the poller and
trigger-processing both finding it, concurrent calls) changes nothing the second
time. The intent, its new deposit, the actions it decided and the events it emitted
commit together; with ``watch``, so does the verifier's watch of the deposit.

An intent whose amount was converted at a price is revalued at the credit
(:mod:`intentd.domain.valuation`) at the ``valuer``'s prices, or those the same deposit
was valued at before a reorg retracted it (recorded with the deposit: crediting it again
decides the same). The revaluation and everything it decided commit with the deposit in
the one transaction: a crash before the commit leaves nothing, and the redelivered
deposit is valued afresh; after it, the deposit is a duplicate. Without a trusted price
the deposit is credited and the intent awaits one (:mod:`intentd.lifecycle.valuation`).

A reconciled deposit (ETH through a contract) has two possible identities, by its block
or by the transaction that paid it (``chain.evm.reconciled_ids``); a balance rise recorded
under one is never credited again under the other (rows recorded before identities by
transaction, a block whose trace did not account for it on one node).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import structlog

from intentd import observability as metrics
from intentd.chain.evm.balances import is_reconciled, reconciled_tx_hash
from intentd.contract.record import IntentRow
from intentd.domain.deposits import Deposit, Disposition, RecordedDeposit
from intentd.domain.status import IntentStatus
from intentd.domain.valuation import Rate
from intentd.faults import crash_point
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.outcomes import Outcome, Unappliable
from intentd.lifecycle.ports import Rates, UnitOfWork
from intentd.lifecycle.saving import load, save

__all__ = ["SEEN_BEFORE", "credit"]

log = structlog.get_logger()

SEEN_BEFORE = frozenset({Outcome.DUPLICATE, Outcome.RELOCATED})
"""Outcomes of a deposit that was recorded before (nothing new was credited)."""


async def credit(
    uow: UnitOfWork,
    book: ChainBook,
    deposit: Deposit,
    *,
    now: datetime,
    watch: bool = False,
    valuer: Rates | None = None,
) -> Outcome:
    """Record one deposit and everything it causes, in one transaction; ``watch``: have
    the trigger verifier watch it (again, if it is recorded anew); ``valuer``: the prices
    a revalued intent's payment is valued at (none: it awaits a price)."""
    async with uow.transaction():
        outcome = await _credit(uow, book, deposit, now, valuer)
        if watch:
            await uow.watches.watch(deposit.key, reopen=outcome not in SEEN_BEFORE)
        return outcome


async def _credit(
    uow: UnitOfWork, book: ChainBook, deposit: Deposit, now: datetime, valuer: Rates | None
) -> Outcome:
    row = await uow.intents.at(deposit.to_address)
    seen = await uow.deposits.find(deposit)
    if seen is not None and seen.disposition is not Disposition.RETRACTED:
        return await _seen_again(uow, seen, deposit)
    revive = seen.id if seen is not None else None
    if row is None:
        await uow.deposits.record(
            deposit, intent_id=None, disposition=Disposition.UNMATCHED, reason=None, revive=revive
        )
        log.warning("deposit to an address no intent has", deposit=str(deposit.key))
        return _count(deposit, Outcome.UNMATCHED)
    if is_reconciled(deposit.token, deposit.from_address):
        same = _same_rise(deposit, await uow.deposits.reconciled_in_block(row.id, deposit))
        if same is not None:
            log.warning(
                "a balance rise already recorded under its other identity; not credited again",
                deposit=str(deposit.key),
                recorded=str(same.key),
                block_number=deposit.block_number,
            )
            return _count(deposit, Outcome.DUPLICATE)
    if await uow.actions.is_own_transaction(deposit.chain, deposit.tx_hash):
        await uow.deposits.record(
            deposit, intent_id=row.id, disposition=Disposition.INTERNAL, reason=None, revive=revive
        )
        return _count(deposit, Outcome.INTERNAL)
    intent = load(book, row)
    token = book.token(deposit.chain, deposit.token)
    rate = _rate(row, seen, valuer)
    decision = intent.apply_deposit(
        deposit,
        token_supported=token is not None,
        min_sweep=token.min_sweep if token is not None else 0,
        rate=rate,
    )
    crash_point("lifecycle.after_revaluation")
    valued = rate if intent.valuation is not None else None
    deposit_id = await uow.deposits.record(
        deposit,
        intent_id=row.id,
        disposition=decision.disposition,
        reason=decision.reason,
        revive=revive,
        rate=valued,
    )
    if valued is not None and row.awaiting_price:  # the credits that awaited it, too
        await uow.deposits.record_valuation(row.id, valued)
    linked = deposit_id if decision.disposition is Disposition.REFUND_OWED else None
    await save(uow, book, row, intent, now=now, deposit_id=linked)
    if row.status is IntentStatus.PENDING and intent.status is IntentStatus.FUNDED:
        waited = (now - deposit.block_time).total_seconds()
        metrics.DEPOSIT_TO_FUNDED.labels(deposit.chain).observe(max(waited, 0.0))
    log.info(
        "deposit recorded",
        intent_id=row.id,
        tx_hash=deposit.tx_hash,
        disposition=decision.disposition.value,
        funding_status=intent.funding.value,
        intent_status=intent.status.value,
        awaiting_price=intent.awaiting_price or None,
        raised=bool(intent.valuation and intent.valuation["raised"]) or None,
    )
    return _count(deposit, Outcome.recorded(decision.disposition))


def _rate(row: IntentRow, seen: RecordedDeposit | None, valuer: Rates | None) -> Rate | None:
    """The prices a credit of ``row`` is valued at: those this very deposit was valued at
    before (a reorg retracted it and brought it back: it decides as it did), else the
    valuer's now. None for an intent that is not revalued, or no trusted price."""
    if row.owed is None or row.status is not IntentStatus.PENDING:
        return None
    if seen is not None and seen.rate is not None:
        return seen.rate
    return valuer.rate(row) if valuer is not None else None


def _same_rise(deposit: Deposit, in_block: Sequence[RecordedDeposit]) -> RecordedDeposit | None:
    """The record of the same balance rise as the reconciled ``deposit`` under its other
    identity (``chain.evm.reconciled_ids``), if one stands: the block-identified record
    when ``deposit`` is identified by a transaction, any transaction-identified one when
    ``deposit`` is identified by its block. A retracted record stands for nothing."""
    by_block = reconciled_tx_hash(deposit.to_address, deposit.block_hash)
    for recorded in in_block:
        other = recorded.deposit.tx_hash
        if recorded.disposition is Disposition.RETRACTED or other == deposit.tx_hash:
            continue
        if by_block in (deposit.tx_hash, other):
            return recorded
    return None


async def _seen_again(uow: UnitOfWork, seen: RecordedDeposit, deposit: Deposit) -> Outcome:
    """A recorded deposit seen again: a duplicate, or the same transfer re-mined elsewhere.

    A re-mined transfer keeps its record, now with its new block; if a retraction of it
    could not be undone, the actions held since then are released (also when its very
    block is canonical again). A transaction re-mined elsewhere that makes another
    transfer at the same position (another amount or recipient) is not that deposit:
    it is refused (dead-lettered with its reason) and releases nothing.
    """
    before = seen.deposit
    if (
        before.block_hash == deposit.block_hash
        and before.transfer_index is not None
        and not seen.orphaned
    ):
        return Outcome.DUPLICATE
    if before.amount != deposit.amount or before.to_address != deposit.to_address:
        metrics.UNCREDIT_ALERTS.labels(deposit.chain).inc()
        log.error(
            "a re-mined transaction made another transfer at a recorded deposit's position;"
            " operator action needed",
            tx_hash=deposit.tx_hash,
            recorded=f"{before.amount} to {before.to_address}",
            seen=f"{deposit.amount} to {deposit.to_address}",
            orphaned=seen.orphaned,
        )
        raise Unappliable(
            f"deposit {deposit.chain}:{deposit.tx_hash}: the transaction now makes another"
            f" transfer ({deposit.amount} to {deposit.to_address}) than the one recorded"
            f" ({before.amount} to {before.to_address})"
        )
    await uow.deposits.relocate(seen, deposit)
    if seen.orphaned and seen.intent_id is not None:
        released = await uow.holds.release(seen.intent_id, deposit.chain)
        log.warning(
            "an orphaned deposit is back on chain; held actions released",
            intent_id=seen.intent_id,
            tx_hash=deposit.tx_hash,
            block_number=deposit.block_number,
            released=released,
        )
    return Outcome.DUPLICATE if before.block_hash == deposit.block_hash else Outcome.RELOCATED


def _count(deposit: Deposit, outcome: Outcome) -> Outcome:
    metrics.DEPOSITS.labels(deposit.chain, outcome.value).inc()
    return outcome
