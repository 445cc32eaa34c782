"""Recovering what a gap in a consumed log skipped, on the fakes: deposits are
re-derived from the chain up to the poller's cursor and credited once, and the ones
recorded in the rescanned blocks are handed to the trigger verifier (a retraction in
the gap); action results
are published again from the outbox; an unbounded gap refuses to be skipped (on a
broker: tests/integration/test_retention_gap.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from tests.unit.indexer.indexer_fakes import USDC, FakeChain, Transfer
from tests.unit.lifecycle.lifecycle_builders import NOW, SOURCE, intent_row, settings
from tests.unit.lifecycle.lifecycle_chain_fakes import FakeChains, FakeDepositChain
from tests.unit.lifecycle.lifecycle_fakes import FakeStore
from tests.unit.lifecycle.lifecycle_positions_fakes import FakePositions

from intentd import wire
from intentd.domain.deposits import RecordedDeposit
from intentd.indexer.planning import BlockRange
from intentd.indexer.range_deposits import scan_range
from intentd.indexer.watched import WatchedAddresses
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.gap_recovery import LogGapRecovery, UnboundedGap
from intentd.lifecycle.log_gaps import LogGap
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.trigger_verifier import TriggerVerifier
from intentd.messages import action_results_topic, deposits_topic, events_topic

PREFIX = "unit"
TO = intent_row(1).intent_address
TOPIC = deposits_topic(PREFIX, SOURCE)


class Setup:
    """Intent 1 (due 3,000 USDC); block 1 pays 1,000 (applied from Kafka), block 3 pays
    1,000 (its message deleted unread), block 5 pays 1,000 (above the poller's cursor)."""

    def __init__(self) -> None:
        self.settings = settings(prefix=PREFIX, token=USDC)
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
        self.recovery = LogGapRecovery(
            self.settings,
            self.store,
            self.positions,
            self.chains,
            reorg_window=1,
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
    verifier = TriggerVerifier(setup.settings, setup.store, setup.chains, final_depth=2)
    assert await verifier.check(SOURCE) == {"retracted": 1}  # block 1 is below the rescan
    assert setup.received() == 1_000


def recorded_in(setup: Setup, block: int) -> list[RecordedDeposit]:
    found = setup.store.uow.state.deposits.values()
    return [d for d in found if d.deposit.block_number == block]


async def test_a_deposits_gap_with_no_applied_block_is_not_skipped() -> None:
    setup = Setup()
    with pytest.raises(UnboundedGap, match="log_positions"):
        await setup.recovery.recover(gap())
    assert setup.received() == 0


async def test_a_failed_chain_read_fails_the_recovery() -> None:
    setup = Setup()
    await setup.apply_block()
    setup.node.fail = RuntimeError("node down")
    with pytest.raises(RuntimeError, match="node down"):
        await setup.recovery.recover(gap())


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
