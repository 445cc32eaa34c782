"""The executor's decisions over in-memory fakes: replacement, reorgs, foreign nonces,
reverts, refusals, crashes and restarts (the real-chain versions are in
``tests/integration/test_executor.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.unit.execution.execution_fakes import (
    TOKEN,
    Crash,
    FakeChain,
    FakeLease,
    FakeStore,
    FakeWriter,
    LeaseTaken,
    decode,
    keyring,
)

from intentd.domain.actions import ActionKind, ActionStatus, SignerKind
from intentd.execution.executor import Executor
from intentd.execution.ports import L1Fees, SendOutcome
from intentd.execution.tracking import TxStatus
from intentd.execution.transfer_planner import NO_L1_FEE
from intentd.execution.tx_plans import Purpose
from intentd.settings import ChainConfig, ExecutionConfig, TokenConfig

CHAIN = "FAKECHAIN"
KEYS = keyring()
RELAYER = KEYS.address(SignerKind.RELAYER)
GAS_TANK = KEYS.address(SignerKind.GAS_TANK)


def chain_config() -> ChainConfig:
    return ChainConfig(
        name=CHAIN, chain_id=84532, network="test", rpc_urls=["http://127.0.0.1:9"],
        confirmations=2,
        tokens=[TokenConfig(address=TOKEN, symbol="USDC", name="USD Coin", decimals=6,
                            category="stablecoin")],
    )  # fmt: skip


class Harness:
    def __init__(self, *, l1_fees: L1Fees = NO_L1_FEE, **execution: Any) -> None:
        self.l1_fees = l1_fees
        self.chain = FakeChain()
        self.store = FakeStore(CHAIN)
        self.config = ExecutionConfig(
            **{"stuck_after": 30.0, "retry_backoff": 0.0, "poll_interval": 0.01, **execution}
        )
        self.executor = self.restart()

    def restart(self) -> Executor:
        """A new process: the same database and chain, nothing in memory."""
        self.writer = FakeWriter(self.chain)
        self.executor = Executor(
            chain_config(),
            self.config,
            store=self.store,
            reader=self.writer,
            fees=self.writer,
            broadcaster=self.writer,
            keyring=KEYS,
            l1_fees=self.l1_fees,
        )
        return self.executor

    async def tick(self, *, mine: int = 0, wait: float = 0.0) -> None:
        self.chain.mine(mine) if mine else None
        self.store.now += wait
        await self.executor.tick()

    def statuses(self, action_id: int) -> list[tuple[int, TxStatus]]:
        return [(tx.nonce, tx.status) for tx in self.store.transactions(action_id)]

    def prefill(self, amount: int = 1_000_000) -> int:
        return self.store.add_action(ActionKind.PREFILL, amount=amount)


async def test_a_prefill_is_recorded_then_sent_then_confirmed_at_depth() -> None:
    h = Harness()
    action_id = h.prefill(7_000_000)
    await h.tick()
    [tx] = h.store.transactions(action_id)
    assert (tx.signer, tx.nonce, tx.status) == (RELAYER, 0, TxStatus.SENT)
    assert list(h.chain.pool) == [tx.tx_hash]
    assert h.store.row(action_id).status is ActionStatus.SUBMITTED
    assert h.store.results(action_id) == [("sent", tx.tx_hash)]

    await h.tick(mine=1)  # one block of the two: included, not final
    assert h.statuses(action_id) == [(0, TxStatus.MINED)]
    assert h.store.row(action_id).status is ActionStatus.SUBMITTED
    await h.tick(mine=1)
    row = h.store.row(action_id)
    assert h.statuses(action_id) == [(0, TxStatus.CONFIRMED)]
    assert (row.status, row.tx_hash, row.amount_sent) == (
        ActionStatus.CONFIRMED, tx.tx_hash, 7_000_000,
    )  # fmt: skip
    receipt = h.chain.receipt(tx.tx_hash)
    assert receipt is not None and row.gas_cost == receipt.gas_used * receipt.effective_gas_price
    assert h.store.results(action_id) == [("sent", tx.tx_hash), ("confirmed", tx.tx_hash)]
    assert h.chain.count(RELAYER) == 1


async def test_a_stuck_transaction_is_replaced_with_the_same_nonce_and_higher_fees() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    await h.tick(wait=29)
    assert len(h.store.transactions(action_id)) == 1  # not stuck yet
    h.chain.base_fee *= 3  # the market moved: the replacement follows it
    await h.tick(wait=2)
    old, new = h.store.transactions(action_id)
    assert (old.status, new.status) == (TxStatus.REPLACED, TxStatus.SENT)
    assert old.nonce == new.nonce == 0 and new.signer == old.signer
    assert new.fees.max_fee_per_gas * 8 >= old.fees.max_fee_per_gas * 9
    assert new.fees.max_fee_per_gas >= 2 * h.chain.base_fee
    assert new.fees.max_priority_fee_per_gas * 8 >= old.fees.max_priority_fee_per_gas * 9
    assert list(h.chain.pool) == [new.tx_hash]  # the node swapped it

    await h.tick(mine=2)
    assert h.statuses(action_id) == [(0, TxStatus.DROPPED), (0, TxStatus.CONFIRMED)]
    assert h.store.row(action_id).tx_hash == new.tx_hash
    # `sent` with the first broadcast, once; `confirmed` with the winner
    assert h.store.results(action_id) == [("sent", old.tx_hash), ("confirmed", new.tx_hash)]


async def test_the_replaced_transaction_mined_instead_wins_and_nothing_more_goes_out() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    await h.tick(wait=31)
    old, new = h.store.transactions(action_id)
    # a block producer that never saw the replacement mines the original
    del h.chain.pool[new.tx_hash]
    h.chain.pool[old.tx_hash] = decode(old.raw)
    await h.tick(mine=2)
    assert h.statuses(action_id) == [(0, TxStatus.CONFIRMED), (0, TxStatus.DROPPED)]
    assert h.store.row(action_id).tx_hash == old.tx_hash
    broadcasts = len(h.chain.broadcasts)
    await h.tick(wait=60, mine=1)
    assert len(h.chain.broadcasts) == broadcasts and h.chain.count(RELAYER) == 1


async def test_a_replacement_above_the_cap_is_not_made() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    h.chain.base_fee = 400 * 10**9  # twice that is above the chain's cap (500 gwei)
    await h.tick(wait=31)
    assert h.statuses(action_id) == [(0, TxStatus.SENT)]
    assert len(h.chain.broadcasts) == 1


async def test_a_transaction_reorged_out_before_its_depth_is_sent_again_and_confirmed_once() -> (
    None
):
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    await h.tick(mine=1)
    [tx] = h.store.transactions(action_id)
    assert (tx.status, tx.block_number) == (TxStatus.MINED, 1)

    h.chain.reorg(1, forget=True)  # the node forgets it: neither in a block nor its pool
    await h.tick()
    [tx] = h.store.transactions(action_id)
    assert (tx.status, tx.block_number) == (TxStatus.SENT, None)
    await h.tick(wait=31)  # stuck and forgotten: the same bytes again, no replacement
    assert h.chain.broadcasts == [tx.raw, tx.raw]
    await h.tick(mine=2)
    [final] = h.store.transactions(action_id)
    assert (final.id, final.status, final.block_number) == (tx.id, TxStatus.CONFIRMED, 2)
    assert h.store.row(action_id).action.attempts == 0
    assert h.store.results(action_id) == [("sent", tx.tx_hash), ("confirmed", tx.tx_hash)]


async def test_a_transaction_reorged_out_of_a_shallow_block_into_another_moves_with_it() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    await h.tick(mine=1)
    h.chain.reorg(1)  # back to the pool, mined again in the next block
    await h.tick(mine=1)
    [tx] = h.store.transactions(action_id)
    assert (tx.status, tx.block_number) == (TxStatus.MINED, 2)
    await h.tick(mine=1)
    assert h.statuses(action_id) == [(0, TxStatus.CONFIRMED)]
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED


async def test_a_confirmation_is_final_a_deeper_reorg_pays_nothing_again() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    await h.tick(mine=2)
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED
    h.chain.reorg(2, forget=True)
    for _ in range(3):
        await h.tick(wait=60, mine=1)
    assert len(h.chain.broadcasts) == 1 and len(h.store.transactions(action_id)) == 1
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED


async def test_a_foreign_transaction_on_our_nonce_fails_the_attempt_only_at_depth() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    [ours] = h.store.transactions(action_id)
    h.chain.use_nonce(RELAYER, 0)  # an operator with the relayer key
    await h.tick(mine=1)  # one block deep: a reorg may still give the nonce back
    assert h.statuses(action_id) == [(0, TxStatus.SENT)]
    assert h.store.row(action_id).status is ActionStatus.SUBMITTED

    await h.tick(mine=1)  # at depth: the attempt failed; the retry is due at once
    row = h.store.row(action_id)
    assert h.statuses(action_id) == [(0, TxStatus.DROPPED)]
    assert (row.status, row.action.attempts) == (ActionStatus.READY, 1)
    assert row.last_error is not None and "used by another transaction" in row.last_error

    await h.tick()  # reconciled again: the next free nonce
    assert h.statuses(action_id) == [(0, TxStatus.DROPPED), (1, TxStatus.SENT)]
    await h.tick(mine=2)
    retry = h.store.transactions(action_id)[1]
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED
    assert h.store.results(action_id) == [("sent", ours.tx_hash), ("confirmed", retry.tx_hash)]
    assert h.chain.count(RELAYER) == 2


async def test_a_foreign_transaction_reorged_out_for_ours_pays_once() -> None:
    h = Harness()
    action_id = h.prefill()
    await h.tick()
    [ours] = h.store.transactions(action_id)
    h.chain.use_nonce(RELAYER, 0)
    await h.tick(mine=1)
    h.chain.reorg(1, forget=True)  # the other fork holds ours instead
    h.chain.pool[ours.tx_hash] = decode(ours.raw)
    await h.tick(mine=2)
    assert h.statuses(action_id) == [(0, TxStatus.CONFIRMED)]
    assert h.store.row(action_id).action.attempts == 0
    assert h.store.results(action_id) == [("sent", ours.tx_hash), ("confirmed", ours.tx_hash)]


async def test_a_revert_is_a_failed_attempt_and_the_last_one_fails_the_action() -> None:
    h = Harness(max_attempts=2)
    h.chain.reverting.add(TOKEN)  # every ERC-20 transfer of the token reverts
    action_id = h.prefill()
    await h.tick()
    first = h.store.transactions(action_id)[0]
    await h.tick(mine=2)
    row = h.store.row(action_id)
    assert h.statuses(action_id) == [(0, TxStatus.REVERTED)]
    assert (row.status, row.action.attempts) == (ActionStatus.READY, 1)

    await h.tick()  # planned again from scratch: new nonce (the reverted one is used)
    await h.tick(mine=2)
    row = h.store.row(action_id)
    assert h.statuses(action_id) == [(0, TxStatus.REVERTED), (1, TxStatus.REVERTED)]
    assert (row.status, row.action.attempts) == (ActionStatus.FAILED, 2)
    [(sent, sent_hash), (failed, _)] = h.store.results(action_id)
    assert (sent, sent_hash, failed) == ("sent", first.tx_hash, "failed")
    await h.tick(wait=60, mine=1)
    assert len(h.store.transactions(action_id)) == 2  # nothing after giving up


async def test_a_gas_estimate_that_reverts_fails_the_attempt_before_anything_is_signed() -> None:
    h = Harness(max_attempts=1)
    h.chain.estimate_reverts = True
    action_id = h.prefill()
    await h.tick()
    row = h.store.row(action_id)
    assert (row.status, row.action.attempts) == (ActionStatus.FAILED, 1)
    assert h.store.transactions(action_id) == [] and h.chain.broadcasts == []
    assert [event for event, _ in h.store.results(action_id)] == ["failed"]


@pytest.mark.parametrize(
    "refusal", [SendOutcome.UNDERPRICED, SendOutcome.INSUFFICIENT_FUNDS, SendOutcome.REJECTED]
)
async def test_a_refused_broadcast_stays_signed_and_the_same_bytes_go_out_next_tick(
    refusal: SendOutcome,
) -> None:
    h = Harness()
    h.chain.refusals.extend([(refusal, "refused")] * 2)  # a tick broadcasts twice: start, track
    action_id = h.prefill()
    await h.tick()
    [tx] = h.store.transactions(action_id)
    assert tx.status is TxStatus.SIGNED and h.store.results(action_id) == []
    assert h.store.row(action_id).action.attempts == 0  # not a failure of the action
    await h.tick()
    assert h.statuses(action_id) == [(0, TxStatus.SENT)]
    assert h.chain.broadcasts == [tx.raw] * 3
    assert h.store.results(action_id) == [("sent", tx.tx_hash)]


async def test_a_broadcast_without_an_answer_is_repeated() -> None:
    h = Harness()
    h.chain.unreachable_sends = 2
    action_id = h.prefill()
    await h.tick()
    assert h.statuses(action_id) == [(0, TxStatus.SIGNED)]
    await h.tick()
    assert h.statuses(action_id) == [(0, TxStatus.SENT)]


@pytest.mark.parametrize("point", ["before", "after"])
async def test_a_crash_around_the_broadcast_sends_the_recorded_bytes_and_nothing_new(
    point: str,
) -> None:
    h = Harness()
    if point == "before":
        h.chain.crash_before_send = 1
    else:
        h.chain.crash_after_send = 1
    action_id = h.prefill()
    with pytest.raises(Crash):
        await h.tick()
    [tx] = h.store.transactions(action_id)  # recorded (committed) before the broadcast
    assert tx.status is TxStatus.SIGNED and h.store.row(action_id).status is ActionStatus.SUBMITTED

    h.restart()
    await h.tick()
    [again] = h.store.transactions(action_id)
    assert (again.id, again.status) == (tx.id, TxStatus.SENT)
    assert {decode(raw).tx_hash for raw in h.chain.broadcasts} == {tx.tx_hash}
    await h.tick(mine=2)
    assert h.store.results(action_id) == [("sent", tx.tx_hash), ("confirmed", tx.tx_hash)]
    assert h.chain.count(RELAYER) == 1


async def test_a_restart_reconciles_nonces_with_the_chain_and_the_records() -> None:
    h = Harness()
    first, second = h.prefill(), h.prefill()
    h.chain.crash_before_send = 1
    with pytest.raises(Crash):
        await h.tick()  # the first recorded with nonce 0, never sent
    h.restart()
    await h.tick()  # nonce 0 broadcast; the second gets 1, not 0 again
    assert h.statuses(first) == [(0, TxStatus.SENT)]
    assert h.statuses(second) == [(1, TxStatus.SENT)]
    await h.tick(mine=2)
    assert h.store.row(first).status is h.store.row(second).status is ActionStatus.CONFIRMED


async def test_a_token_sweep_from_an_intent_address_is_topped_up_by_the_gas_tank_first() -> None:
    h = Harness()
    action_id = h.store.add_action(
        ActionKind.USER_REFUND, signer=SignerKind.INTENT, signer_index=3, amount=3_000_000
    )
    address = KEYS.address(SignerKind.INTENT, 3)
    await h.tick()
    [topup] = h.store.transactions(action_id)
    assert (topup.purpose, topup.signer, topup.to) == (Purpose.GAS_TOPUP, GAS_TANK, address)
    assert h.store.results(action_id) == []  # `sent` is about the transfer
    await h.tick(mine=2)  # the top-up is final: the transfer follows at once
    _, transfer = h.store.transactions(action_id)
    assert (transfer.purpose, transfer.signer, transfer.status) == (
        Purpose.TRANSFER, address, TxStatus.SENT,
    )  # fmt: skip
    assert topup.value >= transfer.gas_limit * transfer.fees.max_fee_per_gas
    await h.tick(mine=2)
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED
    assert h.store.results(action_id) == [
        ("sent", transfer.tx_hash), ("confirmed", transfer.tx_hash),
    ]  # fmt: skip


async def test_a_native_sweep_that_does_not_cover_its_gas_waits_without_an_attempt() -> None:
    h = Harness()
    action_id = h.store.add_action(
        ActionKind.USER_REFUND, token="0x" + "e" * 40, amount=1_000, signer=SignerKind.INTENT,
        signer_index=4, gas_from_amount=True,
    )  # fmt: skip
    await h.tick()
    row = h.store.row(action_id)
    assert (row.status, row.action.attempts) == (ActionStatus.READY, 0)
    assert row.not_before == h.store.now + 300 and h.chain.broadcasts == []


async def test_the_loop_stops_when_the_lease_is_lost() -> None:
    h = Harness()
    lease = FakeLease(lose_after=2)
    with pytest.raises(LeaseTaken):
        await asyncio.wait_for(h.executor.run(asyncio.Event(), lease), 5)
    assert lease.checks == 3 and lease.wakeup is not None


async def test_a_wakeup_starts_new_work_before_the_poll_interval() -> None:
    h = Harness(poll_interval=30.0)
    lease = FakeLease()
    stop = asyncio.Event()
    task = asyncio.create_task(h.executor.run(stop, lease))
    await asyncio.wait_for(lease.checked.wait(), 5)  # the first tick: nothing to do
    lease.checked.clear()
    action_id = h.prefill()
    assert lease.wakeup is not None
    lease.wakeup.set()  # what a NOTIFY does
    await asyncio.wait_for(lease.checked.wait(), 5)
    stop.set()  # the tick under way finishes first
    await asyncio.wait_for(task, 5)
    assert h.statuses(action_id) == [(0, TxStatus.SENT)]
