"""Gas left at an intent address by a sweep is used by its next sweep (docs/execution.md).

The gas tank tops an intent address up with twice the worst-case cost of an ERC-20
transfer; what the transfer does not burn stays there as the tank's *credit*. The next
ERC-20 sweep of the same address gets only what the credit lacks (or no top-up at
all), and never spends more than the credit plus its own top-up.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.integration import test_executor
from tests.integration.test_executor import RECIPIENT, Chain, seed_action, transactions, wait_status

from intentd.adapters.postgres import Pool
from intentd.execution.gas import Fees, topup_value
from intentd.settings import Settings

pytestmark = pytest.mark.integration
make_chain = test_executor.make_chain  # the executor tests' fixtures: an anvil of its own
executing = test_executor.executing


async def test_the_next_sweep_of_an_address_uses_the_gas_left_there_first(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any
) -> None:
    chain: Chain = await make_chain()
    first, intent_id, address = await seed_action(
        pool, settings, chain, kind="relayer_refund", token=chain.usdc, amount=3_000_000,
        signer_kind="intent", to=chain.relayer,
    )  # fmt: skip
    await chain.mint(address, 3_500_000)
    running = executing(chain)
    await wait_status(pool, first, "confirmed")
    topup, transfer = await transactions(pool, first)
    credit = int(topup["value"]) - transfer["gas_used"] * int(transfer["effective_gas_price"])
    assert await chain.balance(address) == credit > 0

    index = await pool.fetchval("SELECT signer_index FROM actions WHERE id = $1", first)
    second = await pool.fetchval(
        """
        INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address, status,
                             signer_kind, signer_index, gas_from_amount)
        VALUES ($1, 'fee_sweep', 1, $2, $3, 500000, $4, 'ready', 'intent', $5, FALSE)
        RETURNING id
        """,
        intent_id, chain.name, chain.usdc, RECIPIENT, index,
    )  # fmt: skip
    await wait_status(pool, second, "confirmed")
    await running.finish()

    assert await chain.token_balance(RECIPIENT) == 500_000
    assert await chain.token_balance(address) == 0
    txs = await transactions(pool, second)
    sweep = txs[-1]
    planned = Fees(int(txs[0]["max_fee_per_gas"]), 0)  # the fees the top-up was planned at
    need = topup_value(
        sweep["gas_limit"],
        planned,
        chain.settings.execution.topup_headroom_bps,
    )
    topups = [int(t["value"]) for t in txs if t["purpose"] == "gas_topup"]
    # the tank sends only what the credit lacks (nothing if it covers the whole need)
    assert topups == ([need - credit] if need > credit else []), (need, credit, topups)
    burned = sweep["gas_used"] * int(sweep["effective_gas_price"])
    assert await chain.balance(address) == credit + sum(topups) - burned
