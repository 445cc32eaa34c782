"""ETH that reaches an intent address through a contract (an internal call) is credited,
exactly once: by the poller, again after a crash that republishes the batch, and by
trigger-processing, in any order; next to a direct payment, each is credited once; a
reorg that mines the paying transaction in another block changes no money.

Each test runs its own automining anvil (it impersonates an intent address and
switches automining off), with the ``Forwarder`` contract (``contracts/Forwarder.sol``)
deployed. The poller's messages are read from its topic and applied with the
lifecycle's own handler, as the lifecycle consumer does.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from eth_abi.abi import encode as abi_encode
from eth_utils import keccak
from tests.lifecycle_calls import apply_action_result, apply_deposit, apply_retraction
from tests.support import TopicReader, new_intent

from intentd.adapters.postgres import Pool, intent_scans, intent_store
from intentd.adapters.postgres.native_intents import PostgresOpenNativeIntents
from intentd.api.connections import Database
from intentd.api.processing import Processor
from intentd.chain.evm.balances import AFTER_EXPIRY, BEFORE_CREATION, Reconciled
from intentd.chain.evm.decoding import NATIVE
from intentd.composition.roles import poller_role
from intentd.contract.record import IntentRow
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.lifecycle.chain_book import ChainBook
from intentd.messages import (
    ActionResultMessage,
    DepositMessage,
    RetractionMessage,
    action_result_id,
    decode_chain_message,
    deposits_topic,
)
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devchain import DevChain
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil
from intentd_dev.devinfra.contracts import forwarder_artifact
from intentd_dev.devinfra.kafka_mock import create_topics

pytestmark = pytest.mark.integration

_names = itertools.count(1)
FORWARD = "0x" + keccak(text="forward(address)")[:4].hex()
SINK = "0x" + "5" * 40


@dataclass
class Chain:
    name: str
    anvil: AnvilProcess
    rpc: DevChain
    payer: str
    forwarder: str
    settings: Settings
    topic: str
    configure: Callable[..., Settings]
    """The settings with keys of the chain's section replaced."""


@pytest.fixture
async def chain(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    topic_prefix: str,
) -> AsyncIterator[Chain]:
    number = next(_names)
    name, chain_id = f"INTERNALTEST_{number}", 980_000 + number
    anvil = await asyncio.to_thread(start_anvil, chain_id)
    try:
        async with DevChain(anvil.url) as rpc:
            payer = (await rpc.accounts())[1]
            artifact = forwarder_artifact()
            receipt = await rpc.receipt(await rpc.send(payer, None, data=artifact.bytecode))
            forwarder = str(receipt["contractAddress"]).lower()
            topic = deposits_topic(topic_prefix, name)
            await asyncio.to_thread(create_topics, infra["INTENTD_KAFKA_MOCK_CONTROL"], [topic], 4)
            section = {
                "chain_id": chain_id,
                "network": "test",
                "rpc_urls": [anvil.url],
                "confirmations": 1,
                "poll_interval": 0.1,
                "batch_size": 50,
                "start_block": 0,
                "rpc_timeout": 2.0,
                "relayer": infra["INTENTD_RELAYER_ADDRESS"],  # a route can reach it; unused
            }
            base = make_settings().chains["BASE_TESTNET"].model_dump()

            def configure(**extra: Any) -> Settings:
                # Tests trigger an intent again at once: the cooldown holds in PostgreSQL.
                return make_settings(
                    chains={name: section | extra, "BASE_TESTNET": base},
                    api={"trigger_cooldown": 0},
                )

            yield Chain(name, anvil, rpc, payer, forwarder, configure(), topic, configure)
    finally:
        await asyncio.to_thread(anvil.stop)


def forward_data(to: str) -> str:
    return FORWARD + abi_encode(["address"], [to]).hex()


async def native_intent(pool: Pool, chain: Chain) -> IntentRow:
    return await new_intent(
        pool, chain.settings, amount="0.01", chain=chain.name, token=NATIVE_TOKEN
    )


async def poll_until(chain: Chain, pool: Pool, settings: Settings | None = None) -> None:
    """Run a poller of the chain until its cursor reaches the chain's head, then stop it."""
    head = await chain.rpc.block_number()
    stop = asyncio.Event()
    task = asyncio.create_task(poller_role(settings or chain.settings, chain.name, pool=pool)(stop))
    try:
        for _ in range(400):
            row = await pool.fetchrow(
                "SELECT block_number FROM chain_cursors WHERE chain = $1", chain.name
            )
            if row is not None and row["block_number"] >= head:
                break
            assert not task.done(), task.exception()
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the poller did not reach the head")
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


async def forget_the_cursor(pool: Pool, chain: str) -> None:
    """What a crash after publishing and before the cursor commit leaves: nothing stored."""
    async with pool.acquire() as conn, conn.transaction():
        for table in ("chain_cursors", "chain_blocks", "published_deposits"):
            await conn.execute(f"DELETE FROM {table} WHERE chain = $1", chain)


async def messages_to(chain: Chain, address: str) -> list[DepositMessage | RetractionMessage]:
    async with TopicReader(chain.settings.kafka.bootstrap_servers, chain.topic) as reader:
        await reader.read_to_end()  # all that was published (not what 1 s reads)
        messages = [decode_chain_message(m.value) for m in reader.messages]
    return [m for m in messages if m.to_address == address]


async def published_to(chain: Chain, address: str) -> list[DepositMessage]:
    return [m for m in await messages_to(chain, address) if isinstance(m, DepositMessage)]


async def apply_all(
    pool: Pool, chain: Chain, messages: Sequence[DepositMessage | RetractionMessage]
) -> None:
    now = datetime.now(UTC)
    async with pool.acquire() as conn:
        for message in messages:
            if isinstance(message, DepositMessage):
                await apply_deposit(conn, chain.settings, message, now=now)
            else:
                await apply_retraction(conn, chain.settings, message, now=now)


async def recorded(pool: Pool, row: IntentRow) -> tuple[int, list[tuple[int, str]]]:
    """(received, [(amount, disposition)]) of the intent."""
    async with pool.acquire() as conn:
        fresh = await intent_store.get_by_id(conn, row.id)
        deposits = await intent_scans.deposits_of(conn, row.id)
    assert fresh is not None
    return fresh.received, sorted((d.deposit.amount, d.disposition.value) for d in deposits)


async def trigger(pool: Pool, chain: Chain, row: IntentRow) -> Any:
    processor = Processor(
        chain.settings,
        Database.of(chain.settings, pool),
        book=ChainBook.of_settings(chain.settings),
    )
    try:
        return await processor.trigger(row, now=datetime.now(UTC))
    finally:
        await processor.close()


async def test_a_forwarded_payment_is_credited_once_by_poller_restart_and_trigger(
    chain: Chain, pool: Pool
) -> None:
    row = await native_intent(pool, chain)
    address = row.intent_address
    await chain.rpc.receipt(
        await chain.rpc.send(
            chain.payer, chain.forwarder, value=row.total_due, data=forward_data(address)
        )
    )
    await chain.rpc.mine(2)

    await poll_until(chain, pool)
    await forget_the_cursor(pool, chain.name)  # the batch is read and published again
    await poll_until(chain, pool, chain.configure(batch_size=1))  # other ranges, same ids
    published = await published_to(chain, address)
    await apply_all(pool, chain, published)
    outcome = await trigger(pool, chain, row)

    assert len(published) == 2  # the same deposit twice (republished), one id
    assert len({m.id for m in published}) == 1
    [message] = published[:1]
    assert (message.amount, message.token) == (row.total_due, NATIVE)
    assert message.log_index == -1
    assert outcome.new == frozenset()  # trigger-processing found the same deposit
    assert await recorded(pool, row) == (row.total_due, [(row.total_due, "credited")])


async def test_trigger_processing_first_then_the_poller_credit_once(
    chain: Chain, pool: Pool
) -> None:
    row = await native_intent(pool, chain)
    address = row.intent_address
    await chain.rpc.receipt(
        await chain.rpc.send(
            chain.payer, chain.forwarder, value=row.total_due, data=forward_data(address)
        )
    )
    await chain.rpc.mine(2)

    first = await trigger(pool, chain, row)
    await poll_until(chain, pool)
    await apply_all(pool, chain, await published_to(chain, address))
    again = await trigger(pool, chain, row)

    assert len(first.new) == 1
    assert again.new == frozenset()
    assert await recorded(pool, row) == (row.total_due, [(row.total_due, "credited")])


async def test_a_direct_and_a_forwarded_payment_in_one_block_are_credited_once_each(
    chain: Chain, pool: Pool
) -> None:
    """Block k: a direct payment. Block k+1: the intent address itself sends some ETH
    away (paying gas), a forwarded payment and a second direct payment arrive."""
    row = await native_intent(pool, chain)
    address = row.intent_address
    rpc = chain.rpc
    direct_1 = direct_2 = row.total_due // 4
    forwarded = row.total_due - direct_1 - direct_2  # the three make the total, exactly
    await rpc.receipt(await rpc.send(chain.payer, address, value=direct_1))

    await rpc.rpc("anvil_impersonateAccount", address)
    await rpc.automine(False)
    out = await rpc.send(address, SINK, value=direct_1 // 2)
    via = await rpc.send(chain.payer, chain.forwarder, value=forwarded, data=forward_data(address))
    direct = await rpc.send(chain.payer, address, value=direct_2)
    await rpc.mine(1)
    await rpc.automine(True)
    receipts = [await rpc.receipt(h) for h in (out, via, direct)]
    assert len({r["blockNumber"] for r in receipts}) == 1  # one block
    await rpc.mine(2)

    await poll_until(chain, pool)
    published = await published_to(chain, address)
    await apply_all(pool, chain, published)
    outcome = await trigger(pool, chain, row)

    amounts = sorted(m.amount for m in published)
    assert amounts == sorted([direct_1, direct_2, forwarded])
    assert len({m.id for m in published}) == 3
    assert outcome.new == frozenset()
    assert await recorded(pool, row) == (
        row.total_due,
        sorted([(direct_1, "credited"), (direct_2, "credited"), (forwarded, "credited")]),
    )


async def test_a_reorg_retracts_a_reconciled_deposit_and_credits_the_new_branchs(
    chain: Chain, pool: Pool
) -> None:
    row = await native_intent(pool, chain)
    address, rpc = row.intent_address, chain.rpc
    await rpc.mine(3)
    snapshot = await rpc.snapshot()
    await rpc.receipt(
        await rpc.send(chain.payer, chain.forwarder, value=10**15, data=forward_data(address))
    )
    await rpc.mine(2)
    await poll_until(chain, pool)

    await rpc.revert(snapshot)  # the forwarding block is gone; another one pays 2e15
    await rpc.mine(1)
    await rpc.receipt(
        await rpc.send(chain.payer, chain.forwarder, value=2 * 10**15, data=forward_data(address))
    )
    await rpc.mine(5)
    await poll_until(chain, pool)
    messages = await messages_to(chain, address)
    await apply_all(pool, chain, messages)

    assert [(m.kind, m.block_number) for m in messages][:2] == [
        ("deposit", messages[0].block_number),
        ("retraction", messages[0].block_number),
    ]
    orphaned, retraction, replacement = messages
    assert retraction.id == orphaned.id and retraction.block_hash == orphaned.block_hash
    assert isinstance(replacement, DepositMessage) and replacement.id != orphaned.id
    assert replacement.amount == 2 * 10**15
    canonical = await rpc.rpc("eth_getBlockByNumber", hex(replacement.block_number), False)
    assert replacement.block_hash == canonical["hash"]
    assert await recorded(pool, row) == (
        2 * 10**15,
        [(10**15, "retracted"), (2 * 10**15, "credited")],
    )


async def test_only_open_native_coin_intents_of_the_chain_are_reconciled(
    chain: Chain, pool: Pool
) -> None:
    """The watched set reads every intent through the source; it keeps the open ones."""
    native = await native_intent(pool, chain)
    elsewhere, token = await native_intent(pool, chain), await native_intent(pool, chain)
    moved = "UPDATE intents SET source_chain = 'BASE_TESTNET' WHERE id = $1"
    await pool.execute(moved, elsewhere.id)  # a native-coin intent of another chain
    await pool.execute("UPDATE intents SET token_in = $2 WHERE id = $1", token.id, "0x" + "9" * 40)
    source = PostgresOpenNativeIntents(pool, chain.name)
    watched = WatchedIntents(source)
    await watched.refresh()
    created = int(native.created_at.timestamp())
    expires = int(native.expires_at.timestamp())

    for row in (native, elsewhere, token):  # every intent is watched
        assert watched.addresses.contains_hex(row.intent_address)
    [window] = await source.reconciled(created, created + 10)
    assert window == Reconciled.of_intent(native.intent_address, created, expires)
    assert await source.reconciled(expires + AFTER_EXPIRY + 1, expires + AFTER_EXPIRY + 9) == []
    assert await source.reconciled(created - 10_000, created - BEFORE_CREATION - 1) == []
    later = await native_intent(pool, chain)
    assert len(await source.reconciled(created, created + 10)) == 1  # not refreshed yet
    await watched.refresh()
    found = await source.reconciled(created, created + 10)
    assert {w.address for w in found} == {native.intent_address, later.intent_address}


async def prefill_done(pool: Pool, chain: Chain, row: IntentRow) -> None:
    """The executor sends and confirms the intent's prefill (the relayer has paid)."""
    action = await pool.fetchrow(
        "SELECT id, chain FROM actions WHERE intent_id = $1 AND kind = 'prefill'", row.id
    )
    assert action is not None, "no prefill owed"
    await pool.execute("UPDATE actions SET status = 'confirmed' WHERE id = $1", action["id"])
    async with pool.acquire() as conn:
        for event in ("sent", "confirmed"):
            message = ActionResultMessage(
                id=action_result_id(action["id"], event), action_id=action["id"],
                intent_id=row.id, action_kind="prefill", event=event, chain=action["chain"],
                tx_hash="0x" + f"{action['id']:064x}",
                block_number=1 if event == "confirmed" else None,
                **({"amount_sent": 1, "gas_cost": 0} if event == "confirmed" else {}),
            )  # fmt: skip
            await apply_action_result(conn, chain.settings, message, now=datetime.now(UTC))


async def money_of(pool: Pool, row: IntentRow) -> dict[str, Any]:
    """What the intent's record says about money: received, its deposits, its actions."""
    async with pool.acquire() as conn:
        fresh = await intent_store.get_by_id(conn, row.id)
        deposits = await conn.fetch(
            "SELECT tx_hash, block_number, amount, disposition, orphaned_at IS NOT NULL AS orphaned"
            " FROM deposits WHERE intent_id = $1 ORDER BY id",
            row.id,
        )
        actions = await conn.fetch(
            "SELECT kind, status FROM actions WHERE intent_id = $1 ORDER BY id", row.id
        )
    assert fresh is not None
    return {
        "received": fresh.received,
        "deposits": [
            (d["tx_hash"], d["block_number"], int(d["amount"]), d["disposition"], d["orphaned"])
            for d in deposits
        ],
        "actions": [(a["kind"], a["status"]) for a in actions],
    }


async def test_a_reorg_that_mines_a_forwarded_payment_elsewhere_changes_no_money(
    chain: Chain, pool: Pool
) -> None:
    """The forwarded payment funds the intent and the relayer prefills it; a reorg mines
    the same transaction one block later. The deposit keeps its id and is relocated:
    nothing is retracted, held or refunded, and the relayer's repayment stays owed."""
    row = await native_intent(pool, chain)
    address, rpc = row.intent_address, chain.rpc
    await rpc.mine(3)
    paid = await rpc.send(
        chain.payer, chain.forwarder, value=row.total_due, data=forward_data(address)
    )
    receipt = await rpc.receipt(paid)
    raw = await rpc.rpc("eth_getRawTransactionByHash", paid)
    await rpc.mine(1)
    await poll_until(chain, pool)
    [first] = await messages_to(chain, address)
    await apply_all(pool, chain, [first])
    await prefill_done(pool, chain, row)
    before = await money_of(pool, row)

    # blocks n and n+1 replaced; the payment mined again in the second of them
    await rpc.rpc("anvil_reorg", 2, [[raw, 1]])
    await rpc.mine(2)
    await poll_until(chain, pool)
    messages = await messages_to(chain, address)
    await apply_all(pool, chain, messages[1:])
    after = await money_of(pool, row)

    moved = await rpc.rpc("eth_getTransactionReceipt", paid)
    assert int(moved["blockNumber"], 16) == int(receipt["blockNumber"], 16) + 1
    assert [m.kind for m in messages] == ["deposit", "deposit"]  # no retraction
    assert messages[1].id == first.id and messages[1].block_hash == moved["blockHash"].lower()
    assert (first.amount, messages[1].amount) == (row.total_due, row.total_due)
    assert after["received"] == before["received"] == row.total_due
    [(tx_hash, block_number, amount, disposition, orphaned)] = after["deposits"]
    assert (tx_hash, amount, disposition, orphaned) == (first.tx_hash, row.total_due,
                                                        "credited", False)  # fmt: skip
    assert block_number == int(moved["blockNumber"], 16)  # relocated
    assert after["actions"] == before["actions"]  # nothing held, no refund owed
    assert all(status != "held" for _, status in after["actions"])
