"""The expiry loop's decisions on the fakes: what is expired when, what a failing intent
costs the others, and the event log's pruning (the SQL itself:
tests/integration/api/test_api_events.py and test_lifecycle_execution.py)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import REGISTRY
from tests.unit.lifecycle.lifecycle_builders import book, deposit, intent_row, settings
from tests.unit.lifecycle.lifecycle_fakes import FakeStore, FakeUnitOfWork
from tests.unit.lifecycle.lifecycle_progress_fakes import FakeLogProgress

from intentd.adapters.diagnosis import diagnose_for
from intentd.adapters.postgres.intent_store import ConcurrentUpdate
from intentd.backoff import Backoff
from intentd.domain.intent import ActionKind
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.expiry import Expiry
from intentd.lifecycle.outcomes import Outcome
from intentd.supervision import Health, supervise

GRACE = timedelta(seconds=settings().intents.expiry_grace_seconds)


def store_with(*due_in: float) -> FakeStore:
    """Intents 1, 2, ... due for expiry (``expires_at`` plus the grace) ``due_in`` seconds
    from now (negative: overdue)."""
    uow = FakeUnitOfWork()
    now = datetime.now(UTC)
    for n, seconds in enumerate(due_in, start=1):
        uow.add_intent(intent_row(n, expires_at=now - GRACE + timedelta(seconds=seconds)))
    return FakeStore(uow)


def statuses(store: FakeStore) -> list[IntentStatus]:
    return [row.status for _, row in sorted(store.uow.state.intents.items())]


async def all_expired(store: FakeStore) -> None:
    """Return once every intent is EXPIRED (looking every 10 ms)."""
    while statuses(store).count(IntentStatus.PENDING):  # noqa: ASYNC110 (state of a fake)
        await asyncio.sleep(0.01)


async def test_due_intents_are_expired_and_the_others_left_alone() -> None:
    store = store_with(-60, 3600, -1)
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()))
    assert await loop.expire_due() == 2
    assert statuses(store) == [IntentStatus.EXPIRED, IntentStatus.PENDING, IntentStatus.EXPIRED]
    assert store.uow.event_types().count("intent_expired") == 2
    assert await loop.expire_due() == 0


async def test_a_round_looks_at_one_batch_at_most() -> None:
    store = store_with(-3, -2, -1)
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()), batch=2)
    assert await loop.expire_due() == 2
    assert statuses(store).count(IntentStatus.PENDING) == 1
    assert await loop.expire_due() == 1


async def test_an_intent_whose_expiry_would_only_fail_again_is_left_to_a_restart() -> None:
    store = store_with(-2, -1)
    store.uow.fail_next = KeyError("bug")  # the first intent's transaction
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()))
    assert await loop.expire_due() == 2
    assert statuses(store) == [IntentStatus.PENDING, IntentStatus.EXPIRED]
    assert await loop.expire_due() == 0  # not looked at again by this process


async def test_an_intent_that_lost_to_another_transaction_is_tried_next_round() -> None:
    store = store_with(-2, -1)
    store.uow.fail_next = ConcurrentUpdate("lost")
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()))
    assert await loop.expire_due() == 2
    assert statuses(store) == [IntentStatus.PENDING, IntentStatus.EXPIRED]
    assert await loop.expire_due() == 1
    assert statuses(store) == [IntentStatus.EXPIRED, IntentStatus.EXPIRED]


async def test_an_unavailable_database_ends_the_round_and_the_supervised_loop_goes_on() -> None:
    store = store_with(-1)
    store.uow.fail_next = ConnectionResetError("gone")
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()), max_sleep=0.01)
    with pytest.raises(ConnectionResetError):
        await loop.expire_due()
    store.uow.fail_next = ConnectionResetError("gone")
    stop = asyncio.Event()
    task = asyncio.create_task(
        supervise(
            "expiry",
            loop.run,
            stop,
            health=Health(),
            diagnose=diagnose_for(None),
            restart=Backoff(0.001, cap=0.01),
        )
    )
    async with asyncio.timeout(5):
        await all_expired(store)
    stop.set()
    await task


async def test_the_loop_wakes_for_the_next_expiry() -> None:
    store = store_with(0.2)
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()), max_sleep=30)
    stop = asyncio.Event()
    task = asyncio.create_task(loop.run(stop))
    async with asyncio.timeout(5):  # not the 30 seconds of max_sleep
        await all_expired(store)
    stop.set()
    async with asyncio.timeout(5):
        await task


def pruning(ages: list[float], *, fail: Exception | None = None) -> tuple[Expiry, FakeStore]:
    store = FakeStore()
    store.uow.state.due.event_ages = ages
    store.uow.events.fail_prune = fail
    return Expiry(
        settings(), store, book=ChainBook.of_settings(settings()), prune_every=3600, prune_batch=10
    ), store


async def test_a_backlog_is_pruned_one_batch_per_round_then_not_before_the_interval() -> None:
    days = settings().intents.event_retention_days
    loop, store = pruning([days + 1.0] * 23 + [days - 1.0])
    assert [await loop.prune_when_due() for _ in range(5)] == [10, 10, 3, 0, 0]
    assert store.uow.events.prunes == 3
    assert store.uow.state.due.event_ages == [days - 1.0]


async def test_a_failed_pruning_is_logged_and_postponed() -> None:
    loop, store = pruning([], fail=ValueError("bad"))
    assert await loop.prune_when_due() == 0
    assert await loop.prune_when_due() == 0
    assert store.uow.events.prunes == 1


async def test_an_unavailable_database_is_left_to_the_loop() -> None:
    loop, store = pruning([], fail=ConnectionRefusedError("down"))
    with pytest.raises(ConnectionRefusedError):
        await loop.prune_when_due()
    assert await loop.prune_when_due() == 0 and store.uow.events.prunes == 2  # tried again at once


async def test_a_payment_mined_before_expires_at_but_read_after_it_funds_the_intent() -> None:
    """The expiry race: the poller reads a block ``confirmations`` blocks late and the
    lifecycle applies it later still; the merchant paid on time must be paid."""
    uow = FakeUnitOfWork()
    uow.add_intent(intent_row(1, expires_at=datetime.now(UTC) - timedelta(seconds=5)))
    store = FakeStore(uow)
    row = uow.state.intents[1]
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()))
    await loop.expire_due()  # runs before the poller has read the paying block
    paid = deposit(row.intent_address, row.total_due, block_time=row.expires_at)
    now = datetime.now(UTC)
    assert await credit(store.uow, book(), paid, now=now) is Outcome.CREDITED
    assert statuses(store) == [IntentStatus.FUNDED]
    assert store.uow.event_types().count("intent_expired") == 0
    assert ActionKind.USER_REFUND not in [a.action.kind for a in store.uow.actions_of(1)]


async def test_an_intent_is_expired_once_the_grace_after_expires_at_is_over() -> None:
    store = store_with(-1, 30)  # expires_at passed: the grace and 1 s ago, 30 s less ago
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()))
    assert await loop.expire_due() == 1
    assert statuses(store) == [IntentStatus.EXPIRED, IntentStatus.PENDING]


def forced_expiries() -> float:
    return REGISTRY.get_sample_value("intentd_intents_expired_total", {"outcome": "forced"}) or 0.0


async def test_a_lagging_lifecycle_holds_expiry_back_until_it_has_applied_the_logs() -> None:
    """The chaos run's restart with a backlog: the on-time payment is still unread in the
    deposits log when the grace is over."""
    store = store_with(-1)
    row = store.uow.state.intents[1]
    progress = FakeLogProgress(end=7, committed=3)
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()), progress=progress)
    assert await loop.expire_due() == 0  # reads the end offsets
    assert await loop.expire_due() == 0  # not committed up to them yet
    paid = deposit(row.intent_address, row.total_due, block_time=row.expires_at)
    now = datetime.now(UTC)
    assert await credit(store.uow, book(), paid, now=now) is Outcome.CREDITED
    progress.committed = 7
    await loop.expire_due()
    assert statuses(store) == [IntentStatus.FUNDED]


async def test_an_intent_is_expired_once_the_logs_are_applied_up_to_after_its_grace() -> None:
    store = store_with(-1)
    progress = FakeLogProgress(end=7, committed=3)
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()), progress=progress)
    await loop.expire_due()
    progress.committed = 7
    assert await loop.expire_due() == 1
    assert statuses(store) == [IntentStatus.EXPIRED]


async def test_logs_applied_up_to_a_moment_before_the_grace_ended_do_not_expire_it() -> None:
    grace_ends = time.monotonic() + 1.0  # far enough for a loaded machine's first read
    store = store_with(1.0)
    loop = Expiry(
        settings(),
        store,
        book=ChainBook.of_settings(settings()),
        progress=FakeLogProgress(end=7, committed=7),
    )
    assert await loop.expire_due() == 0  # end offsets read before the grace ended
    await asyncio.sleep(grace_ends + 0.1 - time.monotonic())  # until the grace has ended
    assert await loop.expire_due() == 0  # applied up to them: still before the grace ended
    assert await loop.expire_due() == 1  # applied up to end offsets read after it
    assert statuses(store) == [IntentStatus.EXPIRED]


@pytest.mark.parametrize("trouble", ["unknown", "failing"])
async def test_past_the_grace_max_an_intent_is_expired_anyway_and_counted(trouble: str) -> None:
    grace_max = timedelta(seconds=settings().intents.expiry_grace_max_seconds)
    store = store_with(-(grace_max - GRACE).total_seconds() - 1, -1)
    progress = FakeLogProgress(end=7, committed=3)
    if trouble == "unknown":
        progress.known = False
    else:
        progress.fail = ConnectionError("brokers down")
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()), progress=progress)
    before = forced_expiries()
    assert await loop.expire_due() == 1
    assert statuses(store) == [IntentStatus.EXPIRED, IntentStatus.PENDING]
    assert forced_expiries() == before + 1


async def test_brokers_that_do_not_answer_do_not_hold_forced_expiries_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from intentd.lifecycle import expiry

    monkeypatch.setattr(expiry, "PROGRESS_TIMEOUT", 0.05)
    grace_max = timedelta(seconds=settings().intents.expiry_grace_max_seconds)
    store = store_with(-(grace_max - GRACE).total_seconds() - 1)
    progress = FakeLogProgress(end=7, committed=3)
    progress.hang = True
    loop = Expiry(settings(), store, book=ChainBook.of_settings(settings()), progress=progress)
    assert await loop.expire_due() == 1
    assert statuses(store) == [IntentStatus.EXPIRED]
