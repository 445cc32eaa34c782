"""The hold watch on the fakes: one operator alert per deposit orphaned past the bound,
none for a deposit that came back, and the held actions stay held."""

from __future__ import annotations

from datetime import timedelta

from prometheus_client import REGISTRY
from tests.unit.lifecycle.lifecycle_builders import (
    NOW,
    SOURCE,
    book,
    deposit,
    intent_row,
    retraction_of,
)
from tests.unit.lifecycle.lifecycle_fakes import FakeStore

from intentd.domain.deposits import Deposit
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.holds import HoldWatch
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.retractions import retract


async def orphan(store: FakeStore, intent_id: int, n: int) -> Deposit:
    """Fund intent ``intent_id`` with deposit ``n``, sign its prefill, then reorg the
    deposit away: it cannot be un-credited, so it is orphaned and held."""
    uow = store.uow
    uow.add_intent(intent_row(intent_id, total_due=1_000))
    paid = deposit(intent_row(intent_id).intent_address, 1_000, n=n)
    await credit(uow, book(), paid, now=NOW)
    uow.actions_of(intent_id)[0].status = "signed"
    assert await retract(uow, book(), retraction_of(paid), now=NOW) is Outcome.RETRACTION_ALERT
    return paid


def alerts() -> float:
    found = REGISTRY.get_sample_value("intentd_reorg_holds_overdue_total", {"chain": SOURCE})
    return found or 0.0


async def test_an_overdue_hold_raises_one_alert() -> None:
    store = FakeStore()
    paid = await orphan(store, 1, n=1)
    watch = HoldWatch(store, alert_after=60)
    before = alerts()
    assert await watch.check() == 0  # orphaned just now
    store.age_orphans(timedelta(minutes=2))
    assert await watch.check() == 1
    assert alerts() == before + 1
    assert await watch.check() == 0  # once per deposit
    assert alerts() == before + 1
    assert store.uow.recorded(paid.key).orphaned  # still held: an operator decides


async def test_each_overdue_deposit_is_alerted_and_one_back_on_chain_is_not() -> None:
    store = FakeStore()
    first = await orphan(store, 1, n=1)
    back = await orphan(store, 2, n=2)
    again = deposit(back.to_address, 1_000, n=2, block_number=7, branch=1)
    assert await credit(store.uow, book(), again, now=NOW) is Outcome.RELOCATED
    store.age_orphans(timedelta(hours=1))
    await orphan(store, 3, n=3)  # orphaned after the others, within the bound
    watch = HoldWatch(store, alert_after=1800)
    assert await watch.check() == 1
    assert store.uow.state.due.alerted == {store.uow.recorded(first.key).id}
