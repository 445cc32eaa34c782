"""A prefill beyond what the relayer holds, over the executor's fakes (the anvil versions
are in ``tests/integration/test_relayer_float.py``).

Before (issue 20, section 4): a token prefill the relayer could not pay reverted its gas
estimate, counted a failed attempt, and failed for good within seconds (the payer was
refunded after paying, though a refill minutes later would have paid the recipient); a
native one was signed and refused by the node for ever, its nonce blocking every later
prefill of the relayer. Now it is never signed while short: it waits for a refill, with
an alert, up to ``liquidity.prefill_wait`` (900 s by default), then fails and is refunded.
"""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY
from tests.unit.execution.execution_fakes import RECIPIENT, TOKEN, FakeLease, LeaseTaken
from tests.unit.execution.test_executor_on_fakes import CHAIN, GAS_TANK, RELAYER, Harness

from intentd.domain.actions import NATIVE, ActionKind, ActionStatus, SignerKind
from intentd.execution.tracking import TxStatus

USDC = 10**6
ETH = 10**18
RECIPIENT_2 = "0x" + "5b" * 20


def funded(tokens: int, coin: int = ETH) -> Harness:
    """A harness whose chain tracks balances: the relayer holds ``tokens`` and ``coin``."""
    h = Harness()
    h.chain.funds = {(RELAYER, TOKEN): tokens, (RELAYER, NATIVE): coin, (GAS_TANK, NATIVE): ETH}
    return h


def short_looks(symbol: str = "USDC") -> float:
    labels = {"chain": CHAIN, "token": symbol}
    return REGISTRY.get_sample_value("intentd_prefills_short_total", labels) or 0.0


async def test_a_prefill_beyond_the_relayers_balance_waits_and_goes_out_after_a_refill() -> None:
    h = funded(500_000)
    looks = short_looks()
    action_id = h.prefill(USDC)
    for _ in range(5):  # ten minutes of looks: never signed, never an attempt
        await h.tick(wait=120)
    row = h.store.row(action_id)
    assert (row.status, row.action.attempts) == (ActionStatus.READY, 0)
    assert h.store.transactions(action_id) == [] and h.store.results(action_id) == []
    assert row.last_error is not None and "lacks 0.5 USDC" in row.last_error
    assert short_looks() - looks >= 5
    assert h.chain.broadcasts == []

    h.chain.funds[(RELAYER, TOKEN)] = 3 * USDC  # the operator refills the relayer
    await h.tick(wait=30)
    [tx] = h.store.transactions(action_id)
    assert (tx.signer, tx.status) == (RELAYER, TxStatus.SENT)
    await h.tick(mine=2)
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED
    assert [event for event, _ in h.store.results(action_id)] == ["sent", "confirmed"]
    assert h.chain.balance(RELAYER, TOKEN) == 2 * USDC


async def test_a_prefill_short_past_the_bound_fails_once_and_the_payer_is_refunded() -> None:
    h = funded(500_000)
    action_id = h.prefill(USDC)
    await h.tick()
    await h.tick(wait=899)  # a second before the bound: still waiting
    assert h.store.row(action_id).status is ActionStatus.READY
    assert h.store.results(action_id) == []
    await h.tick(wait=2)
    row = h.store.row(action_id)
    assert row.status is ActionStatus.FAILED and h.store.transactions(action_id) == []
    assert row.last_error is not None and "lacked 0.5 USDC for 901 s" in row.last_error
    # `failed` is what makes the lifecycle refund the payer (lifecycle/handlers.py)
    assert h.store.results(action_id) == [("failed", None)]
    await h.tick(wait=60)
    assert h.store.results(action_id) == [("failed", None)] and h.chain.broadcasts == []


async def test_a_native_prefill_beyond_the_relayers_coin_does_not_block_later_prefills() -> None:
    h = funded(5 * USDC, coin=ETH // 100)
    native = h.store.add_action(ActionKind.PREFILL, token=NATIVE, amount=ETH // 10)
    token = h.store.add_action(ActionKind.PREFILL, amount=USDC, to=RECIPIENT_2)
    await h.tick()
    await h.tick(mine=2)
    assert h.store.transactions(native) == []  # not signed: no nonce taken
    assert h.store.row(native).status is ActionStatus.READY
    assert h.statuses(token) == [(0, TxStatus.CONFIRMED)]
    assert h.chain.balance(RELAYER, TOKEN) == 4 * USDC


async def test_a_token_prefill_waits_while_the_relayer_cannot_pay_its_gas() -> None:
    h = funded(5 * USDC, coin=10**9)  # 1 gwei of coin: not one transfer's gas
    action_id = h.prefill(USDC)
    await h.tick()
    row = h.store.row(action_id)
    assert row.status is ActionStatus.READY and h.chain.broadcasts == []
    assert row.last_error is not None and "ETH" in row.last_error
    h.chain.funds[(RELAYER, NATIVE)] = ETH
    await h.tick(wait=30)
    await h.tick(mine=2)
    assert h.store.row(action_id).status is ActionStatus.CONFIRMED


async def test_prefills_in_flight_count_against_the_balance_until_they_are_final() -> None:
    h = funded(USDC)
    first = h.prefill(600_000)
    second = h.store.add_action(ActionKind.PREFILL, amount=600_000, to=RECIPIENT_2)
    await h.tick()  # the first is signed; the second would take what the first spends
    assert h.statuses(first) == [(0, TxStatus.SENT)]
    assert h.store.transactions(second) == []
    await h.tick(mine=2, wait=30)  # the first is final: 0.4 left, still short
    assert h.store.row(first).status is ActionStatus.CONFIRMED
    assert h.store.transactions(second) == []
    assert h.chain.balance(RELAYER, TOKEN) == 400_000
    h.chain.funds[(RELAYER, TOKEN)] = 2 * USDC
    await h.tick(wait=30)
    assert h.statuses(second) == [(1, TxStatus.SENT)]


async def test_a_balance_from_a_node_behind_our_own_payments_decides_nothing() -> None:
    h = funded(USDC)
    first = h.prefill(USDC)
    await h.tick()
    await h.tick(mine=2)
    assert h.store.row(first).status is ActionStatus.CONFIRMED  # the relayer has 0 now
    h.chain.funds[(RELAYER, TOKEN)] = 2 * USDC  # refilled (at block 0, for the fake)
    looks = short_looks()
    second = h.store.add_action(ActionKind.PREFILL, amount=USDC, to=RECIPIENT_2)
    h.writer.behind = lambda: 2  # a node below the block of the confirmed prefill
    await h.tick()
    row = h.store.row(second)
    assert row.status is ActionStatus.READY and h.store.transactions(second) == []
    assert row.last_error is not None and "node lags" in row.last_error
    assert short_looks() == looks  # no verdict, no alert
    h.writer.behind = lambda: 0
    await h.tick(wait=5)
    assert h.statuses(second) == [(1, TxStatus.SENT)]


async def test_a_restart_while_a_prefill_waits_neither_loses_nor_doubles_it() -> None:
    h = funded(500_000)
    action_id = h.prefill(USDC)
    await h.tick()
    h.restart()  # a new process: the same rows and chain
    await h.tick(wait=60)
    assert h.store.row(action_id).status is ActionStatus.READY
    h.chain.funds[(RELAYER, TOKEN)] = 2 * USDC
    h.restart()
    await h.tick(wait=60)
    await h.tick(mine=2)
    assert [event for event, _ in h.store.results(action_id)] == ["sent", "confirmed"]
    assert h.chain.count(RELAYER) == 1 and h.chain.balance(RECIPIENT, TOKEN) == USDC


async def test_the_float_is_read_and_stored_with_what_the_records_say() -> None:
    h = funded(5 * USDC)
    h.store.state.pending = {TOKEN: 2 * USDC}
    h.prefill(USDC)  # reserved, and sent in this tick
    h.store.add_action(  # a repayment on its way to the relayer
        ActionKind.RELAYER_REFUND, signer=SignerKind.INTENT, signer_index=7, amount=3 * USDC,
        to=RELAYER,
    )  # fmt: skip
    h.store.state.actions[2].status = ActionStatus.HELD  # not executed here
    await h.tick()
    floats = h.store.state.floats
    relayer, _ = floats[("relayer", TOKEN)]
    assert (relayer.balance, relayer.reserved, relayer.owed, relayer.pending) == (
        5 * USDC, USDC, 3 * USDC, 2 * USDC,
    )  # fmt: skip
    assert relayer.address == RELAYER and relayer.owed_overdue == 0
    tank, _ = floats[("gas_tank", NATIVE)]
    assert (tank.address, tank.balance) == (GAS_TANK, ETH)
    labels = {"chain": CHAIN, "token": "USDC"}
    assert REGISTRY.get_sample_value("intentd_relayer_free", labels) == 4.0
    assert REGISTRY.get_sample_value("intentd_relayer_owed", labels) == 3.0
    assert REGISTRY.get_sample_value("intentd_gas_tank_balance", {"chain": CHAIN}) == 1.0
    # a process that stops leading the chain shows none of its figures any more
    with pytest.raises(LeaseTaken):
        await asyncio.wait_for(h.executor.run(asyncio.Event(), FakeLease(lose_after=0)), 5)
    assert REGISTRY.get_sample_value("intentd_relayer_free", labels) is None
    assert REGISTRY.get_sample_value("intentd_gas_tank_balance", {"chain": CHAIN}) is None
