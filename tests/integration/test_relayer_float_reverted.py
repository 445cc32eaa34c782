"""A relayer transfer that reverted (mined, status 0) spent gas at its block: the
float's "newest paid" block counts it, so a balance read from a node below it (which
still shows that gas) is not believed (issue 19, executor lag, finding 5). It paid no
amount: nothing counts it as paid."""

from __future__ import annotations

import secrets

import pytest
from tests.support import new_intent

from intentd.adapters.postgres import Pool, relayer_float
from intentd.settings import Settings

pytestmark = pytest.mark.integration
RELAYER = "0x" + "ab" * 20
TOKEN = "0x" + "cd" * 20


async def seed(pool: Pool, settings: Settings, chain: str, status: str, block: int) -> int:
    intent = await new_intent(pool, settings)
    action_id = await pool.fetchval(
        """
        INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address, status,
                             signer_kind, signer_index, gas_from_amount)
        VALUES ($1, 'prefill', 1, $2, $3, 1000000, $4, 'ready', 'relayer', NULL, false)
        RETURNING id
        """,
        intent.id, chain, TOKEN, "0x" + "5b" * 20,
    )  # fmt: skip
    await pool.execute(
        """
        INSERT INTO chain_transactions (action_id, purpose, chain, signer, nonce, tx_hash,
               raw_tx, to_address, value, gas_limit, max_fee_per_gas,
               max_priority_fee_per_gas, status, block_number, block_hash, gas_used,
               effective_gas_price)
        VALUES ($1, 'transfer', $2, $3, $4, $5, '\\x02', $6, 0, 60000, 10, 1, $7, $8, $9,
                40000, 5)
        """,
        action_id, chain, RELAYER, block, "0x" + secrets.token_hex(32), TOKEN, status, block,
        "0x" + secrets.token_hex(32),
    )  # fmt: skip
    return int(action_id)


async def test_a_reverted_relayer_transfer_is_the_newest_paid_block(
    pool: Pool, settings: Settings
) -> None:
    chain = f"REVERTED_{secrets.token_hex(4).upper()}"
    await seed(pool, settings, chain, "confirmed", 5)
    await seed(pool, settings, chain, "reverted", 9)  # spent gas at block 9, paid nothing
    async with pool.acquire() as conn, conn.transaction():
        committed = await relayer_float.relayer_commitments(conn, chain, RELAYER)
        figures = await relayer_float.exposure(conn, chain, RELAYER, 3600.0)
    assert committed.newest_paid == 9, "a node below the reverted transfer would be believed"
    assert figures.newest_paid == 9
    assert committed.in_flight == {}  # the reverted one is not counted as being paid
    assert figures.reserved == {TOKEN: 2_000_000}  # both prefills wait to be paid (ready)
    index = await pool.fetchval(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'chain_transactions_reverted_by_signer'"
    )
    assert index is not None and "reverted" in index  # migration 0023
