"""The trigger verifier's verdicts on the fakes: a watched deposit is left, settled,
relocated or retracted as its block and transaction fare on the node (against anvil:
tests/integration/test_trigger_reorgs.py)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.unit.chain.chain_fakes import ROUTER, USDC, FakeChain, ForwardingChain, Transfer
from tests.unit.lifecycle.lifecycle_builders import (
    NOW,
    SOURCE,
    intent_row,
    retraction_of,
    settings,
)
from tests.unit.lifecycle.lifecycle_chain_fakes import FakeChains, FakeDepositChain, ReadFailed
from tests.unit.lifecycle.lifecycle_fakes import FakeStore

from intentd import wire
from intentd.chain.blocks import BlockRange
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.balances import Reconciled
from intentd.chain.evm.decoding import NATIVE
from intentd.chain.evm.range_deposits import scan_range
from intentd.chain.evm.reconciled_ids import reconciled_by_transaction
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.domain.deposits import Deposit, Disposition
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.retractions import retract
from intentd.scanning.trigger_verifier import TriggerVerifier
from intentd.settings import Settings

FINAL_DEPTH = 3
TO = intent_row(1).intent_address
PAYMENT = Transfer(to=TO, amount=1_000, token=USDC)


class Setup:
    """Intent 1 paid by :data:`PAYMENT` in block 1, credited by trigger-processing and
    watched."""

    def __init__(self, *, confirmations: int = 1, token_in: str = USDC) -> None:
        self.settings: Settings = settings(token=USDC, confirmations=confirmations)
        self.book = ChainBook.of_settings(self.settings)
        self.store = FakeStore()
        later = datetime.now(UTC) + timedelta(days=1)
        row = replace(intent_row(1, total_due=1_000, expires_at=later), token_in=token_in)
        self.store.uow.add_intent(replace(row, token_out=USDC))
        self.chain = ForwardingChain()
        self.node = FakeDepositChain(self.chain, [USDC])
        self.chains = FakeChains(**{SOURCE: self.node})
        self.verifier = TriggerVerifier(
            self.settings,
            self.store,
            self.chains,
            book=self.book,
            final_depth=FINAL_DEPTH,
            interval=0.01,
        )

    async def pay(self, *, through: Transfer | None = None) -> Deposit:
        """Mine :data:`PAYMENT`, or the contract call ``through`` that pays the intent
        (found by balance reconciliation), and credit and watch it as trigger-processing
        does."""
        if through is None:
            self.chain.mine(PAYMENT)
        else:
            self.chain.calls[through.tx_hash] = (TO, through.amount)
            self.chain.mine(through)
        blocks = BlockRange(self.chain.head, self.chain.head)
        raw = await self.node.read_range(blocks)
        _, [found] = await scan_range(
            SOURCE, self.node, raw, blocks, tokens=[USDC], watched=WatchedAddresses([TO]),
            reconciliation=Reconciliation(SOURCE, self.node.state()),
            reconciled=[Reconciled(TO, 0, 2**62)],
        )  # fmt: skip
        paid = wire.found_deposit(SOURCE, found)
        assert await credit(self.store.uow, self.book, paid, now=NOW) is Outcome.CREDITED
        await self.store.uow.watches.watch(paid.key, reopen=False)
        return paid

    def settled(self, paid: Deposit) -> str | None:
        return self.store.uow.state.due.settled.get(paid.key)


async def test_a_canonical_deposit_is_watched_until_final_then_settled() -> None:
    setup = Setup()
    paid = await setup.pay()
    assert await setup.verifier.check(SOURCE) == {"canonical": 1}
    setup.chain.mine(count=FINAL_DEPTH)
    assert await setup.verifier.check(SOURCE) == {"final": 1}
    assert setup.settled(paid) == "final"
    assert await setup.verifier.check(SOURCE) == {}  # no longer watched


async def test_a_height_the_node_does_not_have_decides_nothing() -> None:
    setup = Setup()
    paid = await setup.pay()
    setup.chain.fork(keep=0)  # the node lags behind: no block 1 at all
    assert await setup.verifier.check(SOURCE) == {"unseen": 1}
    assert setup.settled(paid) is None
    assert setup.store.uow.row(1).received == 1_000


async def test_a_transfer_gone_with_its_block_is_retracted_and_the_scan_rewound() -> None:
    setup = Setup()
    paid = await setup.pay()
    setup.chain.fork(keep=0)
    setup.chain.mine(count=2)  # another branch, without the payment
    assert await setup.verifier.check(SOURCE) == {"retracted": 1}
    row = setup.store.uow.row(1)
    assert (row.status, row.received) == (IntentStatus.PENDING, 0)
    assert setup.store.uow.recorded(paid.key).disposition is Disposition.RETRACTED
    assert setup.settled(paid) == "retracted"
    assert setup.store.uow.state.due.rewound == [(1, paid.block_number)]


async def test_a_transfer_mined_again_at_confirmation_depth_is_moved() -> None:
    setup = Setup()
    paid = await setup.pay()
    setup.chain.fork(keep=0)
    setup.chain.mine()
    setup.chain.mine(PAYMENT)  # the same transaction, in block 2 of the new branch
    assert await setup.verifier.check(SOURCE) == {"moved": 1}
    moved = setup.store.uow.recorded(paid.key)
    assert moved.deposit.block_number == 2 and moved.disposition is Disposition.CREDITED
    assert setup.store.uow.row(1).received == 1_000  # still credited once
    assert setup.settled(paid) is None  # watched in its new block
    assert await setup.verifier.check(SOURCE) == {"canonical": 1}


async def test_a_transfer_mined_again_but_not_yet_confirmed_is_waited_for() -> None:
    setup = Setup(confirmations=3)
    paid = await setup.pay()
    setup.chain.fork(keep=0)
    setup.chain.mine()
    setup.chain.mine(PAYMENT)
    assert await setup.verifier.check(SOURCE) == {"waiting": 1}
    assert setup.store.uow.recorded(paid.key).deposit.block_number == 1
    setup.chain.mine(count=2)
    assert await setup.verifier.check(SOURCE) == {"moved": 1}


async def test_a_moved_transfer_whose_receipt_the_node_lacks_is_found_in_its_blocks() -> None:
    """The transaction is in block 2 of the new branch, but the node's receipt index
    trails its blocks: no receipt is no evidence that the transfer is gone. The new
    branch's blocks, read in full, show it moved; if their logs do not show it either,
    the verifier waits."""
    setup = Setup()
    paid = await setup.pay()
    setup.chain.fork(keep=0)
    setup.chain.mine()
    setup.chain.mine(PAYMENT)
    setup.node.receipts_lag = setup.node.logs_cut = True
    assert await setup.verifier.check(SOURCE) == {"waiting": 1}
    assert setup.store.uow.recorded(paid.key).disposition is Disposition.CREDITED
    assert setup.store.uow.row(1).received == 1_000
    assert setup.settled(paid) is None
    setup.node.logs_cut = False
    assert await setup.verifier.check(SOURCE) == {"moved": 1}
    assert setup.store.uow.recorded(paid.key).deposit.block_number == 2


async def test_a_moved_transfer_whose_logs_the_node_does_not_answer_is_waited_for() -> None:
    """The receipt shows the transfer in block 2; the node's eth_getLogs answers nothing
    for that block (its log index stops below it): not evidence that it is gone."""
    setup = Setup()
    await setup.pay()
    setup.chain.fork(keep=0)
    setup.chain.mine()
    setup.chain.mine(PAYMENT)
    setup.node.logs_cut = True
    assert await setup.verifier.check(SOURCE) == {"waiting": 1}
    assert setup.store.uow.row(1).received == 1_000
    setup.node.logs_cut = False
    assert await setup.verifier.check(SOURCE) == {"moved": 1}


async def test_a_transfer_the_new_branch_lacks_is_retracted_even_without_receipts() -> None:
    """No receipt, and the new branch's blocks up to the confirmed head, read in full,
    do not hold the transaction: that is evidence."""
    setup = Setup()
    paid = await setup.pay()
    setup.chain.fork(keep=0)
    setup.chain.mine(count=2)
    setup.node.receipts_lag = True
    assert await setup.verifier.check(SOURCE) == {"retracted": 1}
    assert setup.store.uow.recorded(paid.key).disposition is Disposition.RETRACTED


CALL = Transfer(ROUTER, 1_000, nonce=7)
"""A contract call that pays the intent 1,000 wei through the router."""


async def test_eth_a_contract_paid_mined_again_elsewhere_is_moved_not_retracted() -> None:
    """Trigger-processing credited ETH that a contract call paid (found by balance
    reconciliation); a reorg mines the call one block later: the same deposit, moved
    (no receipt exists for its synthetic id: the verifier reconciles the new branch)."""
    setup = Setup(token_in=NATIVE)
    paid = await setup.pay(through=CALL)
    assert paid.tx_hash == reconciled_by_transaction(TO, CALL.tx_hash)
    setup.chain.fork(keep=0)
    setup.chain.mine()
    setup.chain.mine(CALL)
    assert await setup.verifier.check(SOURCE) == {"moved": 1}
    moved = setup.store.uow.recorded(paid.key)
    assert (moved.deposit.block_number, moved.disposition) == (2, Disposition.CREDITED)
    assert setup.store.uow.row(1).received == 1_000


async def test_eth_a_contract_paid_and_the_new_branch_lacks_is_retracted() -> None:
    setup = Setup(token_in=NATIVE)
    paid = await setup.pay(through=CALL)
    setup.chain.fork(keep=0)
    setup.chain.mine(count=2)
    assert await setup.verifier.check(SOURCE) == {"retracted": 1}
    assert setup.store.uow.recorded(paid.key).disposition is Disposition.RETRACTED
    assert setup.store.uow.row(1).received == 0


async def test_a_deposit_the_poller_retracted_is_no_longer_watched() -> None:
    setup = Setup()
    paid = await setup.pay()
    retraction = retraction_of(paid)  # the poller's
    assert await retract(setup.store.uow, setup.book, retraction, now=NOW) is Outcome.RETRACTED
    assert await setup.verifier.check(SOURCE) == {"gone": 1}
    assert setup.settled(paid) == "gone"


def checks(outcome: str) -> float:
    labels = {"chain": SOURCE, "outcome": outcome}
    return REGISTRY.get_sample_value("intentd_trigger_deposit_checks_total", labels) or 0.0


@pytest.mark.parametrize(("error", "counted"), [(ReadFailed("node"), 0), (KeyError("bug"), 1)])
async def test_no_failure_stops_the_loop(error: Exception, counted: int) -> None:
    setup = Setup()
    paid = await setup.pay()
    setup.chain.mine(count=FINAL_DEPTH)
    setup.node.fail = error
    errors = checks("error")
    stop = asyncio.Event()
    task = asyncio.create_task(setup.verifier.run(stop))
    async with asyncio.timeout(10):  # a few rounds, each failing (not a fixed 0.05 s)
        while setup.node.failed < 3:  # noqa: ASYNC110 (state of a fake)
            await asyncio.sleep(0.005)
    assert not task.done() and setup.settled(paid) is None
    setup.node.fail = None
    async with asyncio.timeout(5):
        while setup.settled(paid) is None:  # noqa: ASYNC110 (state of a fake)
            await asyncio.sleep(0.01)
    stop.set()
    await task
    assert setup.settled(paid) == "final"
    assert (checks("error") - errors > 0) is bool(counted)
    await setup.verifier.close()
    assert setup.chains.closed


class SplitNode(FakeDepositChain):
    """A load balancer's two backends: the block hashes come from one that follows
    another branch at block 1, the receipt from one still behind block 1."""

    def __init__(self, chain: FakeChain, other: FakeChain) -> None:
        super().__init__(chain, [USDC])
        self.other = other

    async def block_hashes(self, numbers: Sequence[int]) -> dict[int, str | None]:
        return {n: self.other.blocks[n]["hash"] if n <= self.other.head else None for n in numbers}

    async def receipt(self, tx_hash: str) -> dict[str, Any] | None:
        return None  # the lagging backend has no block 1 yet

    async def receipt_at(self, tx_hash: str, number: int) -> tuple[str | None, Any]:
        return None, None  # asked together, the same backend says it has no block 1


async def test_no_receipt_from_a_node_without_the_block_retracts_nothing() -> None:
    setup = Setup()
    paid = await setup.pay()
    other = copy.deepcopy(setup.chain)
    other.fork(keep=0)
    other.mine(count=2)  # a backend on another branch at block 1
    setup.chains.nodes[SOURCE] = SplitNode(setup.chain, other)
    assert await setup.verifier.check(SOURCE) == {"waiting": 1}
    assert setup.store.uow.row(1).received == 1_000  # still credited
    assert setup.settled(paid) is None and setup.store.uow.state.due.rewound == []
