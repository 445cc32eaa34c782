"""A native sweep on an ``op_stack`` chain, on anvil (docs/execution.md, L1 data fee).

anvil charges no L1 data fee, not even with ``--network optimism`` (anvil 1.7.1: no
GasPriceOracle at 0x42…0f, no ``l1Fee`` in receipts, and a sweep of the whole
balance less L2 gas is mined), so the refusal op-geth gives the old plan cannot be
staged here; ``tests/unit/execution/test_execution_l1_fee.py`` shows it on
synthetic answers. What is shown here, through the real executor role and node:
without an oracle the sweep is not signed (it waits), and with one (a stub answering
a fixed bound) the sweep leaves the bound plus the margin at the intent address.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from tests.integration import test_executor
from tests.integration.test_executor import Chain, seed_action, transactions, wait_status

from intentd.adapters.evm.l1_fee import GAS_PRICE_ORACLE
from intentd.adapters.postgres import Pool
from intentd.domain.actions import NATIVE
from intentd.execution.gas import l1_fee_reserve
from intentd.settings import Settings

pytestmark = pytest.mark.integration
make_chain = test_executor.make_chain  # the executor tests' fixtures: an anvil of its own
executing = test_executor.executing
RECIPIENT = test_executor.RECIPIENT
BOUND = 7 * 10**12
"""What the stub oracle answers (synthetic, wei)."""


def stub_oracle(bound: int) -> str:
    """Runtime code that answers ``bound`` to ``getL1FeeUpperBound(uint256)`` and
    reverts on any other selector."""
    return (
        "0x60003560e01c63f1c7a58b14601357600080fd5b7f"  # selector check, jump to 0x13
        + bound.to_bytes(32, "big").hex()
        + "60005260206000f3"  # mstore(0, bound); return(0, 32)
    )


def as_op_stack(chain: Chain) -> None:
    config = chain.settings.chains[chain.name].model_copy(update={"l1_fee": "op_stack"})
    chain.settings = chain.settings.model_copy(update={"chains": {chain.name: config}})


async def test_a_native_sweep_waits_for_the_oracle_then_leaves_its_l1_fee(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any
) -> None:
    chain: Chain = await make_chain()
    as_op_stack(chain)
    amount = 10**16
    action_id, _, address = await seed_action(
        pool, settings, chain, kind="user_refund", token=NATIVE, amount=amount,
        signer_kind="intent", gas_from_amount=True,
    )  # fmt: skip
    await chain.fund(address, amount)
    before = await chain.balance(RECIPIENT)
    running = executing(chain)

    # no oracle at the predeploy address: nothing is signed, the sweep waits
    deadline = time.monotonic() + 20
    while "GasPriceOracle" not in str(
        (row := await pool.fetchrow("SELECT * FROM actions WHERE id = $1", action_id))["last_error"]
    ):
        assert time.monotonic() < deadline, dict(row)
        await asyncio.sleep(0.1)
    assert row["status"] == "ready"
    assert row["attempts"] == 0
    assert await transactions(pool, action_id) == []
    assert await chain.balance(address) == amount

    # the oracle answers: the sweep goes out and leaves the bound plus 25 % behind
    await chain.rpc.rpc("anvil_setCode", GAS_PRICE_ORACLE, stub_oracle(BOUND))
    await pool.execute("UPDATE actions SET not_before = now() WHERE id = $1", action_id)
    row = await wait_status(pool, action_id, "confirmed")
    await running.finish()

    [tx] = await transactions(pool, action_id)
    reserve = l1_fee_reserve(BOUND, chain.settings.execution.l1_fee_margin_bps)
    assert reserve == BOUND * 5 // 4
    assert int(tx["value"]) == amount - 21_000 * int(tx["max_fee_per_gas"]) - reserve
    received = await chain.balance(RECIPIENT) - before
    assert received == int(row["amount_sent"]) == int(tx["value"])
    cost = int(row["gas_cost"])
    assert cost == 21_000 * int(tx["effective_gas_price"])  # anvil charged no L1 fee
    left = await chain.balance(address)
    assert received + cost + left == amount  # nothing lost: the reserve stays there
    assert left >= reserve
