"""Recovering what a gap in a consumed log skipped, on the fakes: deposits are
re-derived from the chain up to the poller's cursor and credited once, and the ones
recorded in the rescanned blocks are handed to the trigger verifier (a retraction in
the gap); action results
are published again from the outbox; an unbounded gap refuses to be skipped (on a
broker: tests/integration/test_retention_gap.py)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from tests.unit.chain.chain_fakes import USDC, FakeChain, Transfer
from tests.unit.lifecycle.lifecycle_builders import NOW, SOURCE, intent_row, settings
from tests.unit.lifecycle.lifecycle_chain_fakes import FakeChains, FakeDepositChain
from tests.unit.lifecycle.lifecycle_fakes import FakeStore
from tests.unit.lifecycle.lifecycle_inbox_fakes import FakePublisher
from tests.unit.lifecycle.lifecycle_positions_fakes import FakePositions

from intentd import wire
from intentd.chain.blocks import BlockRange
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.range_deposits import scan_range
from intentd.domain.deposits import RecordedDeposit
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.log_gaps import LogGap
from intentd.lifecycle.outcomes import Outcome
from intentd.messages import action_results_topic, deposits_topic, events_topic
from intentd.scanning.gap_recovery import LogGapRecovery
from intentd.scanning.trigger_verifier import TriggerVerifier

PREFIX = "unit"
TO = intent_row(1).intent_address
TOPIC = deposits_topic(PREFIX, SOURCE)


class Setup:
    """Intent 1 (due 3,000 USDC); block 1 pays 1,000 (applied from Kafka), block 3 pays
    1,000 (its message deleted unread), block 5 pays 1,000 (above the poller's cursor)."""

    def __init__(self, *, batch_size: int = 100) -> None:
        base = settings(prefix=PREFIX, token=USDC)
        chain = base.chains[SOURCE].model_copy(update={"batch_size": batch_size})
        self.settings = base.model_copy(update={"chains": {**base.chains, SOURCE: chain}})
        self.store = FakeStore()
        later = datetime.now(UTC) + timedelta(days=1)
        row = replace(intent_row(1, total_due=3_000, expires_at=later), token_in=USDC)
        self.store.uow.add_intent(replace(row, token_out=USDC))
        self.chain = FakeChain()
        self.node = FakeDepositChain(self.chain, [USDC])
        self.chain.mine(Transfer(to=TO, amount=1_000, token=USDC, nonce=1))  # block 1
        self.chain.mine(count=1)
        self.chain.mine(Transfer(to=TO, amount=1_000, token=USDC, nonce=3))  # block 3
        self.chain.mine(count=1)
        self.chain.mine(Transfer(to=TO, amount=1_000, token=USDC, nonce=5))  # block 5
        self.chains = FakeChains(**{SOURCE: self.node})
        self.positions = FakePositions(self.store.uow, cursors={SOURCE: 4})
        self.positions.addresses = [TO]
        self.dead = FakePublisher()
        self.recovery = LogGapRecovery(
            self.settings,
            self.store,
            self.positions,
            self.chains,
            self.dead,
            book=ChainBook.of_settings(self.settings),
            reorg_window=1,
            retry_base=0.001,
            retry_cap=0.01,
        )

    async def apply_block(self, number: int = 1) -> None:
        blocks = BlockRange(number, number)
        raw = await self.node.read_range(blocks)
        _, [found] = await scan_range(
            SOURCE, self.node, raw, blocks, tokens=[USDC], watched=WatchedAddresses([TO])
        )
        book = ChainBook.of_settings(self.settings)
        deposit = wire.found_deposit(SOURCE, found)
        assert await credit(self.store.uow, book, deposit, now=NOW) is Outcome.CREDITED
        self.positions.applied[(TOPIC, 0)] = number

    def received(self) -> int:
        return self.store.uow.row(1).received


def gap(topic: str = TOPIC) -> LogGap:
    return LogGap(topic, 0, position=1, log_start=5, log_end=9)


async def test_deposits_a_gap_skipped_are_credited_once_from_the_chain() -> None:
    setup = Setup()
    await setup.apply_block()
    await setup.recovery.recover(gap())
    assert setup.received() == 2_000  # block 3's deposit; block 5 is the poller's to publish
    await setup.recovery.recover(gap())  # recovered again (a crash before the commit)
    assert setup.received() == 2_000


async def test_a_retraction_in_the_gap_is_applied_by_the_verifier() -> None:
    """Block 3's deposit was applied, then a reorg orphaned block 3; the poller's
    retraction was deleted unread. The rescan finds nothing there, and the verifier,
    given every deposit recorded in the rescanned blocks, retracts it."""
    setup = Setup()
    await setup.apply_block(1)
    await setup.apply_block(3)
    assert setup.received() == 2_000
    setup.chain.fork(keep=2)
    setup.chain.mine(count=3)  # another branch from block 3 on, without the payments
    await setup.recovery.recover(gap())
    assert set(setup.store.uow.state.watched) >= {d.key for d in recorded_in(setup, 3)}
    verifier = TriggerVerifier(
        setup.settings,
        setup.store,
        setup.chains,
        book=ChainBook.of_settings(setup.settings),
        final_depth=2,
    )
    assert await verifier.check(SOURCE) == {"retracted": 1}  # block 1 is below the rescan
    assert setup.received() == 1_000


def recorded_in(setup: Setup, block: int) -> list[RecordedDeposit]:
    found = setup.store.uow.state.deposits.values()
    return [d for d in found if d.deposit.block_number == block]


async def test_an_unbounded_deposits_gap_is_not_skipped_and_waits_for_the_operator() -> None:
    """Retried (not raised: that would crash-loop ``intentd run``) until an operator
    records the block to rescan from; then it proceeds."""
    setup = Setup()
    recovering = asyncio.ensure_future(setup.recovery.recover(gap()))
    await asyncio.sleep(0.05)
    assert not recovering.done() and setup.received() == 0
    await setup.apply_block()  # the operator's log_positions row (and block 1's credit)
    await asyncio.wait_for(recovering, 10)  # a bound, not a latency
    assert setup.received() == 2_000


async def test_a_failed_chain_read_is_retried_until_the_node_answers() -> None:
    setup = Setup()
    await setup.apply_block()
    setup.node.fail = RuntimeError("node down")
    recovering = asyncio.ensure_future(setup.recovery.recover(gap()))
    await asyncio.sleep(0.05)
    assert not recovering.done()
    setup.node.fail = None
    await asyncio.wait_for(recovering, 10)  # a bound, not a latency
    assert setup.received() == 2_000


async def test_a_rescan_records_its_progress_so_a_repeat_resumes_where_it_stopped() -> None:
    """A recovery cut short (a rebalance, a stop, a crash) after a chunk starts again
    from that chunk, not from the partition's last applied block."""
    setup = Setup(batch_size=2)
    await setup.apply_block()
    reads = setup.node.read_range

    async def cut_short_after_two_chunks(blocks: BlockRange) -> object:
        if blocks.first > 3:
            raise asyncio.CancelledError
        return await reads(blocks)

    setup.node.read_range = cut_short_after_two_chunks  # type: ignore[method-assign,assignment]
    with pytest.raises(asyncio.CancelledError):
        await setup.recovery.recover(gap())
    assert setup.positions.applied[(TOPIC, 0)] == 3  # chunks 0..1 and 2..3 done
    setup.node.read_range = reads  # type: ignore[method-assign]
    await setup.recovery.recover(gap())
    assert setup.positions.applied[(TOPIC, 0)] == 4  # the poller's cursor
    assert setup.received() == 2_000


async def test_a_re_mined_deposit_with_another_transfer_is_dead_lettered() -> None:
    """As on the consumer's path; the rescan goes on."""
    setup = Setup()
    await setup.apply_block()
    await setup.apply_block(3)
    [recorded] = recorded_in(setup, 3)
    other = replace(recorded.deposit, amount=999, block_hash="0x" + "ee" * 32)
    setup.store.uow.state.deposits[recorded.id] = replace(recorded, deposit=other)
    await setup.recovery.recover(gap())
    [letter] = setup.dead.sent
    body = orjson.loads(letter.value)
    assert body["reason"].startswith("error:Unappliable:")
    assert body["topic"] == TOPIC and body["partition"] == 0
    assert setup.positions.applied[(TOPIC, 0)] == 4


async def test_a_group_that_lost_its_committed_position_rescans_from_the_recorded_block() -> None:
    """Its offsets expired (``offsets.retention.minutes``) or ``lifecycle_group`` was
    renamed: the partition has a ``log_positions`` row, so records may have been skipped."""
    setup = Setup()
    await setup.apply_block()
    await setup.recovery.recover(replace(gap(), position=0, uncommitted=True))
    assert setup.received() == 2_000


async def test_a_new_group_has_nothing_to_recover() -> None:
    setup = Setup()
    await asyncio.wait_for(setup.recovery.recover(replace(gap(), uncommitted=True)), 1)
    assert setup.received() == 0
    await setup.recovery.recover(replace(gap(action_results_topic(PREFIX)), uncommitted=True))
    assert setup.positions.replayed == []


async def test_action_results_are_published_again_from_the_outbox() -> None:
    setup = Setup()
    results = action_results_topic(PREFIX)
    await setup.recovery.recover(gap(results))
    assert setup.positions.replayed == [results]


async def test_a_topic_with_no_source_here_is_only_reported() -> None:
    setup = Setup()
    await setup.recovery.recover(gap(events_topic(PREFIX)))
    assert setup.positions.replayed == []
    assert setup.received() == 0
