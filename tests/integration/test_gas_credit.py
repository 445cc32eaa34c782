"""Gas left at an intent address by a sweep is used by its next sweep (docs/execution.md).

The gas tank tops an intent address up with twice the worst-case cost of an ERC-20
transfer; what the transfer does not burn stays there as the tank's *credit*. The next
ERC-20 sweep of the same address gets only what the credit lacks (or no top-up at
all), and never spends more than the credit plus its own top-up.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from tests.integration import test_executor
from tests.integration.test_executor import RECIPIENT, Chain, seed_action, transactions, wait_status
from tests.support import new_intent

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.execution_store import PostgresExecutionTransaction
from intentd.domain.actions import NATIVE, Action, ActionStatus
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


async def test_the_credit_is_every_confirmed_topup_less_every_final_token_transfers_gas(
    pool: Pool, settings: Settings
) -> None:
    """The ledger on synthetic rows: a reverted transfer of an action still being retried
    burned gas too; a native sweep's gas is its own; another action in flight: None."""
    intent = await new_intent(pool, settings)
    chain = f"LEDGER_{secrets.token_hex(4)}"
    address = intent.intent_address

    async def action(token: str, status: str) -> Action:
        action_id = await pool.fetchval(
            """
            INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address,
                                 status, signer_kind, signer_index)
            VALUES ($1, 'user_refund', nextval('intent_address_index_seq'), $2, $3, 1, $4, $5,
                    'intent', $6) RETURNING id
            """,
            intent.id, chain, token, RECIPIENT, status, intent.address_index,
        )  # fmt: skip
        async with pool.acquire() as conn:
            rows = PostgresExecutionTransaction(conn, chain, "unused")
            found = await rows.actions.lock(action_id, ActionStatus(status))
        assert found is not None
        return found

    async def tx(
        action_id: int, purpose: str, status: str, value: int, burned: int, *, l1_fee: int = 0
    ) -> None:
        signer, to = ("0x" + "7" * 40, address) if purpose == "gas_topup" else (address, RECIPIENT)
        await pool.execute(
            """
            INSERT INTO chain_transactions (action_id, purpose, chain, signer, nonce, tx_hash,
                raw_tx, to_address, value, gas_limit, max_fee_per_gas, max_priority_fee_per_gas,
                status, gas_used, effective_gas_price, l1_fee)
            VALUES ($1, $2, $3, $4, 0, $5, '\\x00', $6, $7, 60000, 10, 1, $8, $9, 1, $10)
            """,
            action_id, purpose, chain, signer, "0x" + secrets.token_hex(32), to, value, status,
            burned, l1_fee,
        )  # fmt: skip

    token = "0x" + "ab" * 20
    done = await action(token, "confirmed")
    await tx(done.id, "gas_topup", "confirmed", 1_000, 0)
    await tx(
        done.id, "transfer", "confirmed", 0, 300, l1_fee=50
    )  # and 50 of L1 data fee (OP stack)
    retried = await action(token, "ready")  # its first attempt reverted, burning 200
    await tx(retried.id, "gas_topup", "confirmed", 900, 0)
    await tx(retried.id, "transfer", "reverted", 0, 200)
    await tx(retried.id, "gas_topup", "sent", 5_000, 0)  # not there yet
    sweep = await action(NATIVE, "confirmed")  # a native sweep pays its gas from its amount
    await tx(sweep.id, "transfer", "confirmed", 10**15, 21_000)
    async with pool.acquire() as conn:
        rows = PostgresExecutionTransaction(conn, chain, "unused")
        credit = await rows.funds.gas_credit(retried, address)
        assert credit == 1_000 - 300 - 50 + 900 - 200
        other = await action(token, "submitted")
        assert await rows.funds.gas_credit(retried, address) is None
        assert await rows.funds.gas_credit(other, address) == 1_350  # not busy itself
