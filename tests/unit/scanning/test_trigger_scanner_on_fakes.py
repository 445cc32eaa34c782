"""Trigger-processing's scan-and-credit on the fakes: the window starts at the intent's
creation (less the clock skew), each call scans what is new up to the confirmed head
within its limit, credits once, follows a reorg of the last block scanned, and gives
no answer (``ChainUnavailable``) rather than "nothing found" when the node fails or is
late (against anvil, with the API's limits: tests/integration/test_trigger_reads.py,
tests/integration/api/test_api_trigger_limits.py)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from tests.unit.chain.chain_fakes import USDC, ForwardingChain, Transfer
from tests.unit.lifecycle.lifecycle_builders import NOW, SOURCE, intent_row, settings
from tests.unit.lifecycle.lifecycle_fakes import FakeStore
from tests.unit.scanning.scanning_fakes import FakeScanChain, FakeScanChains, FakeTriggerStore

from intentd.chain.errors import ChainUnavailable, InconsistentAnswer
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.scanning.trigger import TriggerScanner
from intentd.settings import NATIVE_TOKEN, Settings

TO = intent_row(1).intent_address
GENESIS = 1_700_000_000
"""Block n of a fake chain is at ``GENESIS + n``."""


class Setup:
    """Intent 1 (3,000 USDC due) created at block 20's time, with no clock skew allowed;
    blocks 1..30, block 10 (before the window) and blocks 22 and 25 pay it 1,000."""

    def __init__(self, *, max_log_blocks: int = 1_000, timeout: float = 30.0) -> None:
        base = settings(token=USDC)
        api = base.api.model_copy(
            update={"trigger_clock_skew": 0, "trigger_max_log_blocks": max_log_blocks,
                    "trigger_timeout": timeout}
        )  # fmt: skip
        self.settings: Settings = base.model_copy(update={"api": api})
        self.uow = FakeStore().uow
        later = datetime.now(UTC) + timedelta(days=1)
        created = datetime.fromtimestamp(GENESIS + 20, UTC)
        row = replace(intent_row(1, total_due=3_000, expires_at=later), token_in=USDC)
        self.row = self.uow.add_intent(replace(row, created_at=created))
        self.chain = ForwardingChain()
        for n in range(1, 31):
            paid = n in (10, 22, 25)
            self.chain.mine(*([Transfer(to=TO, amount=1_000, token=USDC, nonce=n)] if paid else []))
        self.node = FakeScanChain(self.chain, [USDC])
        self.chains = FakeScanChains(**{SOURCE: self.node})
        self.store = FakeTriggerStore(self.uow)
        self.scanner = TriggerScanner(
            self.settings,
            self.store,
            self.chains,
            reorg_window=4,
            book=ChainBook.of_settings(self.settings),
        )


async def test_the_first_call_scans_the_window_from_the_intents_creation() -> None:
    setup = Setup()
    outcome = await setup.scanner.trigger(setup.row, now=NOW)
    assert outcome.progress is not None
    assert (outcome.progress.first_block, outcome.progress.scanned_to) == (20, 30)
    assert outcome.progress.scanned_hash == setup.chain.blocks[30]["hash"]
    assert outcome.confirmed_head == 30
    assert sorted(d.deposit.block_number for d in outcome.deposits) == [22, 25]  # not block 10
    assert {k for k in outcome.new} == {d.key for d in outcome.deposits}
    assert outcome.intent.received == 2_000
    assert (outcome.balance, outcome.balance_block) == (3_000, 30)  # block 10's included
    assert "full_blocks" not in setup.node.asked  # a token intent: no block read in full
    assert set(setup.uow.state.watched) == {d.key for d in outcome.deposits}


async def test_a_repeated_call_credits_nothing_twice_and_scans_only_new_blocks() -> None:
    setup = Setup()
    await setup.scanner.trigger(setup.row, now=NOW)
    setup.chain.mine(Transfer(to=TO, amount=1_000, token=USDC, nonce=31))
    again = await setup.scanner.trigger(setup.row, now=NOW)
    assert [setup.uow.recorded(k).deposit.block_number for k in again.new] == [31]
    assert again.intent.received == 3_000
    assert again.progress is not None and again.progress.scanned_to == 31
    last = await setup.scanner.trigger(setup.row, now=NOW)
    assert last.new == frozenset()
    assert last.intent.received == 3_000


async def test_a_call_scans_at_most_its_limit_of_blocks() -> None:
    setup = Setup(max_log_blocks=4)
    first = await setup.scanner.trigger(setup.row, now=NOW)
    assert first.progress is not None and first.progress.scanned_to == 23
    assert [d.deposit.block_number for d in first.deposits] == [22]
    second = await setup.scanner.trigger(setup.row, now=NOW)
    assert second.progress is not None and second.progress.scanned_to == 27
    assert [d.deposit.block_number for d in second.deposits] == [22, 25]


async def test_a_reorg_of_the_last_block_scanned_has_the_window_scanned_again() -> None:
    setup = Setup()
    await setup.scanner.trigger(setup.row, now=NOW)
    setup.chain.fork(keep=27)  # blocks 28.. replaced: a payment in the new branch's 29
    setup.chain.mine(count=1)
    setup.chain.mine(Transfer(to=TO, amount=1_000, token=USDC, nonce=29))
    setup.chain.mine(count=1)
    outcome = await setup.scanner.trigger(setup.row, now=NOW)
    assert [setup.uow.recorded(k).deposit.block_number for k in outcome.new] == [29]
    assert outcome.intent.received == 3_000
    assert outcome.progress is not None
    assert outcome.progress.scanned_hash == setup.chain.blocks[30]["hash"]


async def test_a_native_coin_intent_reads_its_window_in_full() -> None:
    setup = Setup()
    row = setup.uow.add_intent(replace(setup.row, token_in=NATIVE_TOKEN))
    setup.chain.mine(Transfer(to=TO, amount=5, nonce=31))
    outcome = await setup.scanner.trigger(row, now=NOW)
    assert "full_blocks" in setup.node.asked
    assert [d.deposit.block_number for d in outcome.deposits if d.deposit.amount == 5] == [31]


@pytest.mark.parametrize(
    "failure", [ChainUnavailable("node down"), InconsistentAnswer("two forks")]
)
async def test_a_failed_read_is_no_answer(failure: Exception) -> None:
    setup = Setup()
    setup.node.fail = failure
    with pytest.raises(ChainUnavailable):
        await setup.scanner.trigger(setup.row, now=NOW)
    assert setup.store.progress == {}


class Slow(FakeScanChain):
    async def latest_block(self) -> int:
        await asyncio.sleep(10)
        return await super().latest_block()


async def test_a_call_past_its_deadline_is_no_answer() -> None:
    setup = Setup(timeout=0.05)
    setup.chains.nodes[SOURCE] = Slow(setup.chain, [USDC])
    with pytest.raises(ChainUnavailable, match="no answer in time"):
        await setup.scanner.trigger(setup.row, now=NOW)


async def test_the_record_is_answered_from_the_store_without_the_chain() -> None:
    setup = Setup()
    await setup.scanner.trigger(setup.row, now=NOW)
    setup.node.fail = ChainUnavailable("node down")
    done = setup.uow.add_intent(replace(setup.uow.row(1), status=IntentStatus.EXPIRED))
    outcome = await setup.scanner.recorded(done)
    assert outcome.balance is None and outcome.progress is None
    assert outcome.intent.status is IntentStatus.EXPIRED
    assert sorted(d.deposit.block_number for d in outcome.deposits) == [22, 25]
    await setup.scanner.close()
    assert setup.chains.closed
