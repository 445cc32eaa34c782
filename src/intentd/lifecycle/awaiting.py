"""Intents awaiting a price: valued as soon as their prices can be trusted again.

A payment of a revalued intent credited while no price could be trusted leaves the
intent PENDING with ``awaiting_price`` (:mod:`intentd.lifecycle.valuation`): its money is
counted (an expiry or a cancel refunds it with the rest), but whether it covers the
intent is not decided on a missing price. :class:`AwaitingPrices` looks for such intents
every few seconds and, for each one whose prices are trusted now, values it in one
transaction under its row lock (load, :meth:`Intent.value_awaiting
<intentd.domain.intent.Intent.value_awaiting>`, save): FUNDED and its prefill if covered,
its total raised if the price fell beyond the slippage; ``intent_funded`` (without a
deposit) either way. An intent that left PENDING meanwhile (expired, cancelled) is
skipped. The partial index ``intents_awaiting_price`` keeps the look cheap.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import structlog

from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.ports import Rates, Store, UnitOfWork
from intentd.lifecycle.saving import load, save
from intentd.supervision import progress
from intentd.wait import wait_any

__all__ = ["AwaitingPrices", "value_awaiting"]

log = structlog.get_logger()

BATCH = 100
"""Intents looked at per round."""


async def value_awaiting(
    uow: UnitOfWork, book: ChainBook, rates: Rates, *, now: datetime, limit: int = BATCH
) -> int:
    """Value every PENDING intent awaiting a price whose prices are trusted now (each in a
    transaction of its own); how many were valued."""
    async with uow.transaction():
        ids = await uow.intents.awaiting_price(limit=limit)
    valued = 0
    for intent_id in ids:
        async with uow.transaction():
            row = await uow.intents.lock(intent_id)
            if row is None:
                continue
            rate = rates.rate(row)
            if rate is None:
                continue
            intent = load(book, row)
            if not intent.value_awaiting(rate):
                continue
            await save(uow, book, row, intent, now=now)
            await uow.deposits.record_valuation(intent_id, rate)
            valued += 1
            log.info(
                "a payment credited while no price could be trusted is valued",
                intent_id=intent_id,
                intent_status=intent.status.value,
                funding_status=intent.funding.value,
            )
    return valued


class AwaitingPrices:
    """The lifecycle task that values intents awaiting a price, every ``interval`` s."""

    def __init__(self, store: Store, book: ChainBook, rates: Rates, *, interval: float) -> None:
        self._store = store
        self._book = book
        self._rates = rates
        self._interval = interval

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``. A database that does not answer ends it with the error (its
        supervisor waits for the database and runs it again)."""
        while not stop.is_set():
            async with self._store.unit() as uow:
                await value_awaiting(uow, self._book, self._rates, now=datetime.now(UTC))
            progress()
            await wait_any(stop, within=self._interval)
