"""Deposits credited by trigger-processing are reorg-safe, with no poller running.

Each test runs its own anvil (``anvil_reorg`` would break the shared chains) under a
chain name of its own, pays an intent there, credits the payment through
trigger-processing, reorganises the chain and runs the verifier.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.conftest import chain_section
from tests.integration.poller_chain import Chain, chain_fixture
from tests.support import new_intent

from intentd.adapters.evm.verifier_chains import EvmVerifierChains
from intentd.adapters.postgres import Pool, intent_store
from intentd.adapters.postgres.lifecycle_uow import PostgresStore
from intentd.api.connections import Database
from intentd.api.processing import Processor
from intentd.contract.record import IntentRow
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.scanning.trigger_verifier import TriggerVerifier
from intentd_dev.devchain import MINT, call_data

pytestmark = pytest.mark.integration

_names = itertools.count(1)
FINAL_DEPTH = 8
DUE = 10_000_000  # 10 USDC: the settings carry no fees


chain = chain_fixture(
    "TRIGREORG",
    980_000,
    # the destination: only its settings are read, nothing is sent there
    other_chains=lambda infra: {
        "ARBITRUM_TESTNET": chain_section(infra, "ARBITRUM_TESTNET", 421614)
    },
    api={"trigger_cooldown": 0},  # one intent is triggered again at once
)


@pytest.fixture
async def processor(chain: Chain, pool: Pool) -> AsyncIterator[Processor]:
    found = Processor(
        chain.settings,
        Database.of(chain.settings, pool),
        book=ChainBook.of_settings(chain.settings),
    )
    yield found
    await found.close()


@pytest.fixture
async def verifier(chain: Chain, pool: Pool) -> AsyncIterator[TriggerVerifier]:
    found = TriggerVerifier(
        chain.settings,
        PostgresStore(pool),
        EvmVerifierChains(),
        book=ChainBook.of_settings(chain.settings),
        final_depth=FINAL_DEPTH,
    )
    yield found
    await found.close()


async def paid_and_triggered(
    chain: Chain, pool: Pool, processor: Processor
) -> tuple[IntentRow, str, int]:
    """A new intent paid in full on ``chain`` and credited by trigger-processing: FUNDED,
    its prefill owed and not signed. Returns (intent, payment hash, payment block)."""
    intent = await new_intent(pool, chain.settings, chain=chain.name)
    await chain.rpc.mine(2)
    paid = await chain.rpc.send(
        chain.payer, chain.usdc, data=call_data(MINT, intent.intent_address, DUE)
    )
    block = int((await chain.rpc.receipt(paid))["blockNumber"], 16)
    await chain.rpc.mine(2)  # confirmations = 1
    result = await processor.trigger(intent, now=datetime.now(UTC))
    assert [d.deposit.tx_hash for d in result.deposits] == [paid]
    assert result.intent.status is IntentStatus.FUNDED
    assert await prefill_statuses(pool, intent.id) == ["ready"]
    return intent, paid, block


async def prefill_statuses(pool: Pool, intent_id: int) -> list[str]:
    rows = await pool.fetch(
        "SELECT status FROM actions WHERE intent_id = $1 AND kind = 'prefill' ORDER BY id",
        intent_id,
    )
    return [r["status"] for r in rows]


async def deposits_of(pool: Pool, intent_id: int) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        "SELECT tx_hash, block_number, block_hash, disposition, amount FROM deposits"
        " WHERE intent_id = $1 ORDER BY id",
        intent_id,
    )
    return [dict(r) for r in rows]


@dataclass
class Rounds:
    """The verifier's rounds for one chain, counted as they begin."""

    count: int = 0

    async def until(self, rounds: int, task: asyncio.Task[None], within: float = 30.0) -> None:
        """Until `rounds` have begun (the verifier still running)."""
        deadline = time.monotonic() + within
        while self.count < rounds:
            assert not task.done(), task
            assert time.monotonic() < deadline, f"{self.count} of {rounds} rounds"
            await asyncio.sleep(0.02)


def counted_rounds(verifier: TriggerVerifier, chain: str) -> Rounds:
    rounds = Rounds()
    check = verifier.check

    async def counted(name: str) -> dict[str, int]:
        if name == chain:
            rounds.count += 1
        return await check(name)

    verifier.check = counted  # type: ignore[method-assign]
    return rounds


async def test_a_trigger_credited_deposit_that_a_reorg_removes_is_retracted(
    chain: Chain, pool: Pool, processor: Processor, verifier: TriggerVerifier
) -> None:
    intent, paid, block = await paid_and_triggered(chain, pool, processor)
    before = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
    assert before is not None
    assert await verifier.check(chain.name) == {"canonical": 1}  # nothing happened yet

    depth = await chain.rpc.block_number() - block + 1
    await chain.rpc.rpc("anvil_reorg", depth, [])  # the payment's block and those after it
    await chain.rpc.mine(1)
    assert await chain.rpc.rpc("eth_getTransactionReceipt", paid) is None

    assert await verifier.check(chain.name) == {"retracted": 1}
    row = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
    assert row is not None
    assert (row.status, row.funding_status, row.received) == (
        IntentStatus.PENDING,
        FundingStatus.NONE,
        0,
    )
    assert await prefill_statuses(pool, intent.id) == ["cancelled"]  # never signed: no prefill
    [deposit] = await deposits_of(pool, intent.id)
    assert deposit["disposition"] == "retracted"

    # Done: nothing more to check, and a new trigger-processing call credits nothing.
    assert await verifier.check(chain.name) == {}
    again = await processor.trigger(row, now=datetime.now(UTC))
    assert again.new == frozenset() and again.intent.received == 0
    assert again.intent.status is IntentStatus.PENDING


async def test_a_trigger_credited_deposit_that_a_reorg_re_includes_stays_credited_once(
    chain: Chain, pool: Pool, processor: Processor, verifier: TriggerVerifier
) -> None:
    intent, paid, block = await paid_and_triggered(chain, pool, processor)
    before = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
    assert before is not None
    raw = await chain.rpc.rpc("eth_getRawTransactionByHash", paid)

    depth = await chain.rpc.block_number() - block + 1
    await chain.rpc.rpc("anvil_reorg", depth, [[raw, 1]])  # mined again, one block later
    await chain.rpc.mine(1)
    receipt = await chain.rpc.receipt(paid)
    moved_to = int(receipt["blockNumber"], 16)
    assert moved_to == block + 1

    assert await verifier.check(chain.name) == {"moved": 1}
    row = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
    assert row is not None
    assert (row.status, row.received, row.event_sequence) == (
        IntentStatus.FUNDED,
        DUE,
        before.event_sequence,
    )
    assert await prefill_statuses(pool, intent.id) == ["ready"]
    [deposit] = await deposits_of(pool, intent.id)
    assert (deposit["tx_hash"], deposit["disposition"], int(deposit["amount"])) == (
        paid,
        "credited",
        DUE,
    )
    assert (deposit["block_number"], deposit["block_hash"]) == (moved_to, receipt["blockHash"])

    again = await processor.trigger(row, now=datetime.now(UTC))
    assert again.new == frozenset() and again.intent.received == DUE
    assert len(await deposits_of(pool, intent.id)) == 1

    # Watched until final, then no more.
    assert await verifier.check(chain.name) == {"canonical": 1}
    await chain.rpc.mine(FINAL_DEPTH)
    assert await verifier.check(chain.name) == {"final": 1}
    assert await verifier.check(chain.name) == {}


async def test_a_payment_mined_only_in_the_new_branch_of_scanned_blocks_is_found(
    chain: Chain, pool: Pool, processor: Processor
) -> None:
    """Trigger-processing scanned up to its confirmed head; a reorg then replaces those
    blocks with a branch that holds a payment. The next call must read the new branch,
    not resume after the old one."""
    intent = await new_intent(pool, chain.settings, chain=chain.name)
    await chain.rpc.mine(4)
    first = await processor.trigger(intent, now=datetime.now(UTC))
    assert first.deposits == [] and first.progress.scanned_to == first.confirmed_head
    payment = {
        "from": chain.payer,
        "to": chain.usdc,
        "data": call_data(MINT, intent.intent_address, DUE),
    }
    await chain.rpc.rpc("anvil_reorg", 3, [[payment, 0]])  # lands at or below scanned_to
    await chain.rpc.mine(1)
    logs = await chain.rpc.rpc(
        "eth_getLogs", {"fromBlock": "0x0", "toBlock": "latest", "address": chain.usdc}
    )
    paid_in = max(int(entry["blockNumber"], 16) for entry in logs)
    assert paid_in <= first.progress.scanned_to

    found = await processor.trigger(intent, now=datetime.now(UTC))
    assert [(d.deposit.block_number, d.disposition) for d in found.deposits] == [
        (paid_in, "credited")
    ]
    assert found.intent.status is IntentStatus.FUNDED


async def test_the_verifier_loop_of_the_lifecycle_retracts_on_its_own(
    chain: Chain, pool: Pool, processor: Processor
) -> None:
    intent, _, block = await paid_and_triggered(chain, pool, processor)
    verifier = TriggerVerifier(
        chain.settings,
        PostgresStore(pool),
        EvmVerifierChains(),
        book=ChainBook.of_settings(chain.settings),
        final_depth=FINAL_DEPTH,
        interval=0.05,
    )
    rounds = counted_rounds(verifier, chain.name)
    stop = asyncio.Event()
    task = asyncio.create_task(verifier.run(stop))
    try:
        await rounds.until(3, task)  # a few rounds: still canonical, nothing changes
        row = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
        assert row is not None and row.status is IntentStatus.FUNDED
        await chain.rpc.rpc("anvil_reorg", await chain.rpc.block_number() - block + 1, [])
        for _ in range(200):
            row = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
            assert row is not None and not task.done()
            if row.status is IntentStatus.PENDING:
                break
            await asyncio.sleep(0.05)
        assert (row.status, row.received) == (IntentStatus.PENDING, 0)
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await verifier.close()


async def test_an_unreachable_rpc_skips_the_round_and_stops_nothing(
    chain: Chain, pool: Pool, processor: Processor
) -> None:
    intent, _, _ = await paid_and_triggered(chain, pool, processor)
    config = chain.settings.chains[chain.name]
    dead = config.model_copy(update={"rpc_urls": ["http://127.0.0.1:9"], "rpc_timeout": 0.2})
    settings = chain.settings.model_copy(
        update={"chains": {**chain.settings.chains, chain.name: dead}}
    )
    verifier = TriggerVerifier(
        settings,
        PostgresStore(pool),
        EvmVerifierChains(),
        book=ChainBook.of_settings(settings),
        final_depth=FINAL_DEPTH,
        interval=0.05,
    )
    rounds = counted_rounds(verifier, chain.name)
    stop = asyncio.Event()
    task = asyncio.create_task(verifier.run(stop))
    try:
        await rounds.until(3, task)  # a few rounds, each failing (not a fixed 1.5 s)
        assert not task.done()
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await verifier.close()
    row = await intent_store.get_by_id(pool, intent.id)  # type: ignore[arg-type]
    assert row is not None and row.status is IntentStatus.FUNDED  # nothing decided blind
