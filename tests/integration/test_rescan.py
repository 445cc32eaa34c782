"""``intentd intents rescan`` (``composition.rescan``) on an anvil of its own: a payment
to an intent whose watch window ended is credited, as a late deposit, refunded."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from tests.integration.test_trigger_receipts import own_base  # noqa: F401 - the fixture
from tests.support import new_intent

from intentd.adapters.postgres import Pool
from intentd.chain.blocks import BlockRange
from intentd.cli import build_parser
from intentd.composition.rescan import RescanRefused, rescan
from intentd.settings import Settings
from intentd_dev.devchain import MINT, DevChain, call_data

pytestmark = pytest.mark.integration


async def test_a_payment_after_the_window_is_credited_once_and_refunded(
    pool: Pool,
    own_base: tuple[DevChain, Settings],  # noqa: F811 - the imported fixture
) -> None:
    rpc, settings = own_base
    row = await new_intent(pool, settings)
    await pool.execute(
        "UPDATE intents SET status = 'COMPLETED', terminal_at = now() - interval '40 days'"
        " WHERE id = $1",
        row.id,
    )
    usdc = settings.chains["BASE_TESTNET"].tokens[0].address
    deployer = (await rpc.accounts())[0]
    minted = await rpc.send(deployer, usdc, data=call_data(MINT, row.intent_address, 7_000_000))
    await rpc.receipt(minted)  # mined before the range is chosen (a loaded anvil may lag)
    head = await rpc.block_number()
    blocks = BlockRange(max(head - 5, 0), head)

    address, now = row.intent_address, datetime.now(UTC)
    done = await rescan(settings, pool, address, "BASE_TESTNET", blocks, now=now)
    [(key, amount, outcome)] = done.found
    assert (amount, outcome) == (7_000_000, "refund_owed")
    refunds = await pool.fetch(
        "SELECT amount, reason FROM actions WHERE intent_id = $1 AND kind = 'user_refund'", row.id
    )
    assert [(r["amount"], r["reason"]) for r in refunds] == [(7_000_000, "late_deposit")]
    watched = await pool.fetchval(
        "SELECT count(*) FROM trigger_deposits t JOIN deposits d ON d.id = t.deposit_id"
        " WHERE d.intent_id = $1",
        row.id,
    )
    assert watched == 1  # the trigger verifier retracts it if a reorg removes its block

    again = await rescan(settings, pool, address, "BASE_TESTNET", blocks, now=now)
    assert again.found == [(key, 7_000_000, "duplicate")]  # credited once

    with pytest.raises(RescanRefused, match="confirmed head"):
        await rescan(settings, pool, address, "BASE_TESTNET", BlockRange(0, head + 5), now=now)


def test_the_command_line_names_the_range() -> None:
    args = build_parser().parse_args(
        ["intents", "rescan", "0x" + "ab" * 20, "--chain", "BASE_TESTNET",
         "--from-block", "10", "--to-block", "20"]
    )  # fmt: skip
    assert (args.intents_command, args.from_block, args.to_block) == ("rescan", 10, 20)
