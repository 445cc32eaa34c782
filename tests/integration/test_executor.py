"""The executor against a real anvil, PostgreSQL and (for the relayed results) Kafka.

Each test runs its own anvil under a chain name of its own, so actions and nonces in
the session database never mix with other tests. Actions are seeded as rows, the way
the lifecycle writes them; intents come from ``tests.support.new_intent``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from eth_account import Account
from eth_utils import to_checksum_address
from tests.conftest import chain_section
from tests.integration.api.conftest import serve
from tests.support import new_intent

from intentd.adapters.postgres import Pool, api_keys, clients
from intentd.composition.roles import executor_role
from intentd.credentials import generate_key
from intentd.execution.executor import Executor
from intentd.faults import CRASH_EXIT_CODE
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devchain import MINT, DevChain, call_data
from intentd_dev.devinfra.accounts import Role, dev_account
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil

pytestmark = pytest.mark.integration

_numbers = itertools.count(1)
_RUN = secrets.token_hex(3).upper()
"""Part of every chain name made here: pytest imports this file as ``test_executor`` and
the files that reuse its fixtures import it again as ``tests.integration.test_executor``,
each copy with its own ``_numbers``. Without it, two tests of one session could get the
same chain name, and the second would find the first one's nonces in the database."""
RECIPIENT = "0x" + "5a" * 20
NATIVE = NATIVE_TOKEN.lower()
BALANCE_OF = "0x70a08231"


@dataclass
class Chain:
    name: str
    chain_id: int
    anvil: AnvilProcess
    rpc: DevChain
    usdc: str
    relayer: str
    gas_tank: str
    funder: str
    settings: Settings

    async def token_balance(self, owner: str) -> int:
        data = BALANCE_OF + "00" * 12 + owner[2:]
        return int(await self.rpc.rpc("eth_call", {"to": self.usdc, "data": data}, "latest"), 16)

    async def balance(self, owner: str) -> int:
        return int(await self.rpc.rpc("eth_getBalance", owner, "latest"), 16)

    async def nonce(self, owner: str) -> int:
        return int(await self.rpc.rpc("eth_getTransactionCount", owner, "latest"), 16)

    async def mint(self, to: str, amount: int) -> None:
        await self.rpc.receipt(
            await self.rpc.send(self.funder, self.usdc, data=call_data(MINT, to, amount))
        )

    async def fund(self, to: str, wei: int) -> None:
        await self.rpc.receipt(await self.rpc.send(self.funder, to, value=wei))


def executor_settings(
    make_settings: Callable[..., Settings],
    *,
    infra: dict[str, str],
    name: str,
    chain_id: int,
    url: str,
    usdc: str,
    **execution: Any,
) -> Settings:
    relayer = dev_account(Role.RELAYER)
    return make_settings(
        chains={
            name: {
                "chain_id": chain_id, "network": "test", "rpc_urls": [url], "confirmations": 2,
                "relayer": relayer.address, "rpc_timeout": 5.0,
                "tokens": [{"address": usdc, "symbol": "USDC", "name": "Test USD Coin",
                            "decimals": 6, "category": "stablecoin"}],
            }
        },
        relayer_key=Path(infra["INTENTD_RELAYER_KEY_FILE"]).read_text().strip(),
        gas_tank_key=Path(infra["INTENTD_GAS_TANK_KEY_FILE"]).read_text().strip(),
        execution={"poll_interval": 0.2, "stuck_after": 30.0, "retry_backoff": 0.0, **execution},
    )  # fmt: skip


@pytest.fixture
async def make_chain(
    infra: dict[str, str], make_settings: Callable[..., Settings]
) -> AsyncIterator[Callable[..., Any]]:
    started: list[tuple[AnvilProcess, DevChain]] = []

    async def make(block_time: float | None = 0.5, **execution: Any) -> Chain:
        number = next(_numbers)
        name = f"EXECTEST_{number}_{os.getpid()}_{_RUN}"
        chain_id = 991_000 + number
        anvil = await asyncio.to_thread(start_anvil, chain_id, None, block_time)
        rpc = DevChain(anvil.url)
        await rpc.__aenter__()
        started.append((anvil, rpc))
        funder = (await rpc.accounts())[0]
        usdc = await rpc.deploy_token(funder, "Test USD Coin", "USDC", 6)
        relayer = dev_account(Role.RELAYER).address.lower()
        gas_tank = dev_account(Role.GAS_TANK).address.lower()
        settings = executor_settings(
            make_settings,
            infra=infra,
            name=name,
            chain_id=chain_id,
            url=anvil.url,
            usdc=usdc,
            **execution,
        )
        chain = Chain(name, chain_id, anvil, rpc, usdc, relayer, gas_tank, funder, settings)
        await chain.mint(relayer, 1_000 * 10**6)
        return chain

    yield make
    for anvil, rpc in started:
        await rpc.__aexit__(None, None, None)
        await asyncio.to_thread(anvil.stop)


async def seed_action(
    pool: Pool,
    settings: Settings,
    chain: Chain,
    *,
    kind: str,
    token: str,
    amount: int,
    signer_kind: str,
    gas_from_amount: bool = False,
    to: str = RECIPIENT,
) -> tuple[int, int, str]:
    """Insert a ready action for a new intent; (action id, intent id, intent address)."""
    intent = await new_intent(pool, settings)
    action_id = await pool.fetchval(
        """
        INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address, status,
                             signer_kind, signer_index, gas_from_amount)
        VALUES ($1, $2, 1, $3, $4, $5, $6, 'ready', $7, $8, $9) RETURNING id
        """,
        intent.id, kind, chain.name, token, amount, to, signer_kind,
        intent.address_index if signer_kind == "intent" else None, gas_from_amount,
    )  # fmt: skip
    return int(action_id), intent.id, intent.intent_address


async def wait_status(pool: Pool, action_id: int, status: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        row = await pool.fetchrow("SELECT * FROM actions WHERE id = $1", action_id)
        if row["status"] == status:
            return row
        assert time.monotonic() < deadline, f"action {action_id} is {row['status']}: {dict(row)}"
        await asyncio.sleep(0.1)


async def results(pool: Pool, settings: Settings, action_id: int) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        "SELECT key, payload FROM outbox WHERE topic = $1 ORDER BY id",
        f"{settings.kafka.topic_prefix}.action-results",
    )
    found = [orjson.loads(r["payload"]) | {"_key": r["key"]} for r in rows]
    return [r for r in found if r["action_id"] == action_id]


async def transactions(pool: Pool, action_id: int) -> list[Any]:
    return list(
        await pool.fetch(
            "SELECT * FROM chain_transactions WHERE action_id = $1 ORDER BY id", action_id
        )
    )


class Running:
    def __init__(self, settings: Settings, name: str, pool: Pool) -> None:
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(executor_role(settings, name, pool=pool)(self.stop))

    async def finish(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 20)


@dataclass
class Ticks:
    """The executors' rounds (``Executor.tick``), counted as they begin."""

    count: int = 0

    async def more(self, rounds: int, *, after: float = 0.0, within: float = 60.0) -> None:
        """Until `rounds` more rounds have begun, counted from `after` seconds on (a time
        the executor must see pass, as ``stuck_after``): a loaded machine makes fewer
        rounds in a given time, and a test that waits for them needs the rounds."""
        await asyncio.sleep(after)
        wanted, deadline = self.count + rounds, time.monotonic() + within
        while self.count < wanted:
            assert time.monotonic() < deadline, f"{self.count} rounds, {wanted} wanted"
            await asyncio.sleep(0.05)


@pytest.fixture
def ticks(monkeypatch: pytest.MonkeyPatch) -> Ticks:
    counted = Ticks()
    tick = Executor.tick

    async def counting(self: Executor) -> None:
        counted.count += 1
        await tick(self)

    monkeypatch.setattr(Executor, "tick", counting)
    return counted


@pytest.fixture
async def executing(pool: Pool) -> AsyncIterator[Callable[[Chain], Running]]:
    started: list[Running] = []

    def start(chain: Chain) -> Running:
        running = Running(chain.settings, chain.name, pool)
        started.append(running)
        return running

    yield start
    for running in started:
        if not running.task.done():
            await running.finish()


async def test_prefill_from_the_relayer_is_sent_and_confirmed_once(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any
) -> None:
    chain: Chain = await make_chain()
    relayer_nonce = await chain.nonce(chain.relayer)
    action_id, intent_id, _ = await seed_action(
        pool, settings, chain, kind="prefill", token=chain.usdc, amount=7_000_000,
        signer_kind="relayer",
    )  # fmt: skip
    running = executing(chain)
    row = await wait_status(pool, action_id, "confirmed")
    await running.finish()

    assert await chain.token_balance(RECIPIENT) == 7_000_000
    assert await chain.nonce(chain.relayer) == relayer_nonce + 1
    [tx] = await transactions(pool, action_id)
    assert (tx["status"], tx["purpose"], tx["signer"]) == ("confirmed", "transfer", chain.relayer)
    assert row["tx_hash"] == tx["tx_hash"] and int(row["amount_sent"]) == 7_000_000
    assert int(row["gas_cost"]) == tx["gas_used"] * int(tx["effective_gas_price"]) > 0
    sent, confirmed = await results(pool, settings, action_id)
    assert (sent["event"], sent["tx_hash"], sent["_key"]) == ("sent", tx["tx_hash"], str(intent_id))
    assert sent["id"] == f"action:{action_id}:sent"
    assert confirmed["event"] == "confirmed" and confirmed["block_number"] == tx["block_number"]
    assert int(confirmed["amount_sent"]) == 7_000_000
    assert int(confirmed["gas_cost"]) == int(row["gas_cost"])


async def test_a_token_sweep_from_an_intent_address_gets_gas_from_the_tank_first(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any
) -> None:
    chain: Chain = await make_chain()
    tank_nonce = await chain.nonce(chain.gas_tank)
    action_id, _, address = await seed_action(
        pool, settings, chain, kind="user_refund", token=chain.usdc, amount=3_000_000,
        signer_kind="intent",
    )  # fmt: skip
    await chain.mint(address, 3_000_000)
    running = executing(chain)
    row = await wait_status(pool, action_id, "confirmed")
    await running.finish()

    assert await chain.token_balance(RECIPIENT) == 3_000_000
    assert await chain.token_balance(address) == 0
    assert await chain.nonce(chain.gas_tank) == tank_nonce + 1
    assert await chain.nonce(address) == 1
    topup, transfer = await transactions(pool, action_id)
    assert (topup["purpose"], topup["signer"], topup["to_address"]) == (
        "gas_topup", chain.gas_tank, address,
    )  # fmt: skip
    assert topup["status"] == transfer["status"] == "confirmed"
    assert transfer["block_number"] > topup["block_number"]
    # the top-up covers the transfer at its max fee with the headroom; the rest stays
    left = await chain.balance(address)
    spent = transfer["gas_used"] * int(transfer["effective_gas_price"])
    assert left == int(topup["value"]) - spent
    assert int(topup["value"]) >= 2 * transfer["gas_limit"] * int(transfer["max_fee_per_gas"])
    assert int(row["gas_cost"]) == spent
    assert [r["event"] for r in await results(pool, settings, action_id)] == ["sent", "confirmed"]


async def test_a_native_sweep_pays_its_gas_from_the_amount(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any
) -> None:
    chain: Chain = await make_chain()
    amount = 10**16
    action_id, _, address = await seed_action(
        pool, settings, chain, kind="user_refund", token=NATIVE, amount=amount,
        signer_kind="intent", gas_from_amount=True,
    )  # fmt: skip
    await chain.fund(address, amount)
    before = await chain.balance(RECIPIENT)
    running = executing(chain)
    row = await wait_status(pool, action_id, "confirmed")
    await running.finish()

    [tx] = await transactions(pool, action_id)
    assert tx["gas_limit"] == 21_000
    assert int(tx["value"]) == amount - 21_000 * int(tx["max_fee_per_gas"])
    received = await chain.balance(RECIPIENT) - before
    assert received == int(row["amount_sent"]) == int(tx["value"])
    cost = 21_000 * int(tx["effective_gas_price"])
    assert int(row["gas_cost"]) == cost
    # what the fee did not use stays at the intent address; nothing else is lost
    assert await chain.balance(address) == amount - received - cost
    assert received + cost + await chain.balance(address) == amount


async def test_a_stuck_transaction_is_replaced_with_the_same_nonce(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any
) -> None:
    chain: Chain = await make_chain(block_time=None, stuck_after=1.0)
    action_id, _, _ = await seed_action(
        pool, settings, chain, kind="prefill", token=chain.usdc, amount=1_000_000,
        signer_kind="relayer",
    )  # fmt: skip
    await chain.rpc.automine(False)
    relayer_nonce = await chain.nonce(chain.relayer)
    running = executing(chain)
    deadline = time.monotonic() + 20
    while len(txs := await transactions(pool, action_id)) < 2:
        assert time.monotonic() < deadline, txs
        await asyncio.sleep(0.1)
    while txs[-1]["status"] != "sent":
        assert time.monotonic() < deadline, txs
        await asyncio.sleep(0.1)
        txs = await transactions(pool, action_id)
    await chain.rpc.automine(True)
    await chain.rpc.mine(3)
    await wait_status(pool, action_id, "confirmed")
    await running.finish()

    txs = await transactions(pool, action_id)
    assert len({t["nonce"] for t in txs}) == 1 and txs[0]["nonce"] == relayer_nonce
    winners = [t for t in txs if t["status"] == "confirmed"]
    assert len(winners) == 1 and {t["status"] for t in txs} <= {"confirmed", "dropped"}
    first, second = txs[0], txs[1]
    assert int(second["max_fee_per_gas"]) * 8 >= int(first["max_fee_per_gas"]) * 9
    assert await chain.token_balance(RECIPIENT) == 1_000_000
    assert await chain.nonce(chain.relayer) == relayer_nonce + 1
    assert [r["event"] for r in await results(pool, settings, action_id)] == ["sent", "confirmed"]


async def test_an_action_that_cannot_succeed_fails_after_its_attempts(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any
) -> None:
    chain: Chain = await make_chain(max_attempts=2)
    # A sweep of tokens the intent address does not hold: its estimate reverts. (A prefill
    # beyond the relayer's balance waits for a refill instead: test_relayer_float.py.)
    action_id, _, _ = await seed_action(
        pool, settings, chain, kind="user_refund", token=chain.usdc, amount=10**15,
        signer_kind="intent",
    )  # fmt: skip
    running = executing(chain)
    row = await wait_status(pool, action_id, "failed")
    await running.finish()
    assert row["attempts"] == 2 and "reverted" in row["last_error"]
    assert await transactions(pool, action_id) == []
    [failed] = await results(pool, settings, action_id)
    assert failed["event"] == "failed" and failed["id"] == f"action:{action_id}:failed"


# --- staged on the chain: the old hash wins, reorgs, a foreign nonce ------------------


@dataclass
class PausedPrefill:
    """A prefill from the relayer being executed on a chain that mines only when told."""

    chain: Chain
    action_id: int
    relayer_nonce: int
    relayer_tokens: int
    running: Running


async def paused_prefill(
    make_chain: Any,
    pool: Pool,
    settings: Settings,
    executing: Any,
    amount: int,
    **execution: Any,
) -> PausedPrefill:
    chain: Chain = await make_chain(block_time=None, **execution)
    action_id, _, _ = await seed_action(
        pool, settings, chain, kind="prefill", token=chain.usdc, amount=amount,
        signer_kind="relayer",
    )  # fmt: skip
    await chain.rpc.automine(False)
    relayer_nonce = await chain.nonce(chain.relayer)
    relayer_tokens = await chain.token_balance(chain.relayer)
    return PausedPrefill(chain, action_id, relayer_nonce, relayer_tokens, executing(chain))


async def wait_txs(
    pool: Pool, action_id: int, done: Callable[[list[Any]], bool], timeout: float = 20.0
) -> list[Any]:
    """The action's transaction rows once ``done`` holds for them."""
    deadline = time.monotonic() + timeout
    while not done(txs := await transactions(pool, action_id)):
        assert time.monotonic() < deadline, [dict(t) for t in txs]
        await asyncio.sleep(0.05)
    return txs


async def send_raw(chain: Chain, raw: bytes) -> str:
    tx_hash: str = await chain.rpc.rpc("eth_sendRawTransaction", "0x" + raw.hex())
    return tx_hash


async def on_chain(chain: Chain, tx_hash: str) -> int | None:
    """The block that holds ``tx_hash`` on the chain as it is now, or None."""
    receipt = await chain.rpc.rpc("eth_getTransactionReceipt", tx_hash)
    return None if receipt is None else int(receipt["blockNumber"], 16)


async def pending_nonce(chain: Chain, owner: str) -> int:
    """The transaction count with the node's pool: what was sent, mined or not."""
    return int(await chain.rpc.rpc("eth_getTransactionCount", owner, "pending"), 16)


async def known_to_node(chain: Chain, tx_hash: str) -> bool:
    return await chain.rpc.rpc("eth_getTransactionByHash", tx_hash) is not None


async def block_hash(chain: Chain, number: int) -> str:
    block = await chain.rpc.rpc("eth_getBlockByNumber", hex(number), False)
    return str(block["hash"]).lower()


def relayer_signed(
    infra: dict[str, str], chain: Chain, *, nonce: int, to: str, max_fee: int, tip: int
) -> bytes:
    """A 0-value transaction signed by hand with the relayer's key (not by the executor)."""
    key = Path(infra["INTENTD_RELAYER_KEY_FILE"]).read_text().strip()
    fields = {
        "type": 2, "chainId": chain.chain_id, "nonce": nonce, "to": to_checksum_address(to),
        "value": 0, "data": b"", "gas": 21_000, "maxFeePerGas": max_fee,
        "maxPriorityFeePerGas": tip, "accessList": [],
    }  # fmt: skip
    return bytes(Account.sign_transaction(fields, key).raw_transaction)


async def test_a_replaced_transaction_mined_instead_of_its_replacement_confirms_once(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any, ticks: Ticks
) -> None:
    paused = await paused_prefill(make_chain, pool, settings, executing, 4_000_001, stuck_after=1.5)
    chain, action_id, running = paused.chain, paused.action_id, paused.running
    relayer_nonce, relayer_tokens = paused.relayer_nonce, paused.relayer_tokens
    old, new = await wait_txs(pool, action_id, lambda t: len(t) == 2 and t[1]["status"] == "sent")
    assert old["status"] == "replaced" and old["nonce"] == new["nonce"] == relayer_nonce
    assert not await known_to_node(chain, old["tx_hash"])  # the node swapped it for `new`

    # A block producer that never saw the replacement mines the original: the node drops
    # the replacement, takes the old signed bytes (from the database) and mines them.
    assert await chain.rpc.rpc("anvil_dropTransaction", new["tx_hash"]) == new["tx_hash"]
    assert await send_raw(chain, bytes(old["raw_tx"])) == old["tx_hash"]
    await chain.rpc.mine(1)
    mined_in = await chain.rpc.block_number()
    assert await on_chain(chain, old["tx_hash"]) == mined_in
    old, new = await wait_txs(pool, action_id, lambda t: t[0]["status"] != "replaced")
    # included, one block of the two: the old hash is the one tracked, the new one waits
    assert (old["status"], old["block_number"], new["status"]) == ("mined", mined_in, "sent")
    await chain.rpc.mine(2)
    row = await wait_status(pool, action_id, "confirmed")
    await ticks.more(3, after=2.0)  # past stuck_after: rounds for anything further to go out
    await running.finish()

    assert await on_chain(chain, new["tx_hash"]) is None
    txs = await transactions(pool, action_id)
    assert [(t["tx_hash"], t["status"]) for t in txs] == [
        (old["tx_hash"], "confirmed"), (new["tx_hash"], "dropped"),
    ]  # fmt: skip
    old = txs[0]
    assert old["block_number"] == mined_in
    assert old["block_hash"] == await block_hash(chain, mined_in)
    assert row["tx_hash"] == old["tx_hash"] and int(row["amount_sent"]) == 4_000_001
    assert int(row["gas_cost"]) == old["gas_used"] * int(old["effective_gas_price"]) > 0
    assert row["attempts"] == 0
    # the money moved once, and nothing more was sent: no nonce used after the old hash
    assert await chain.token_balance(RECIPIENT) == 4_000_001
    assert await chain.token_balance(chain.relayer) == relayer_tokens - 4_000_001
    assert await chain.nonce(chain.relayer) == relayer_nonce + 1
    assert await pending_nonce(chain, chain.relayer) == relayer_nonce + 1
    sent, confirmed = await results(pool, settings, action_id)
    assert (sent["event"], sent["tx_hash"]) == ("sent", old["tx_hash"])
    assert (confirmed["event"], confirmed["tx_hash"]) == ("confirmed", old["tx_hash"])
    assert confirmed["block_number"] == mined_in
    assert int(confirmed["gas_cost"]) == int(row["gas_cost"])


async def test_a_transaction_reorged_out_before_its_depth_is_mined_again_and_confirmed_once(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any
) -> None:
    paused = await paused_prefill(make_chain, pool, settings, executing, 6_000_007, stuck_after=1.0)
    chain, action_id, running = paused.chain, paused.action_id, paused.running
    relayer_nonce, relayer_tokens = paused.relayer_nonce, paused.relayer_tokens
    [tx] = await wait_txs(pool, action_id, lambda t: len(t) == 1 and t[0]["status"] == "sent")
    await chain.rpc.mine(1)
    first_block = await chain.rpc.block_number()
    [tx] = await wait_txs(pool, action_id, lambda t: t[0]["status"] != "sent")
    assert (tx["status"], tx["block_number"]) == ("mined", first_block)  # depth 1 of 2
    first_hash = tx["block_hash"]
    assert first_hash == await block_hash(chain, first_block)

    # A one-block reorg: the block is replaced by an empty one at the same height, and
    # the node forgets the transaction (it is neither in a block nor in its pool).
    await chain.rpc.rpc("anvil_reorg", 1, [])
    assert await chain.rpc.block_number() == first_block
    assert await block_hash(chain, first_block) != first_hash
    assert await on_chain(chain, tx["tx_hash"]) is None
    assert not await known_to_node(chain, tx["tx_hash"])
    assert await chain.nonce(chain.relayer) == relayer_nonce
    [tx] = await wait_txs(pool, action_id, lambda t: t[0]["status"] != "mined")
    assert (tx["status"], tx["block_number"], tx["block_hash"]) == ("sent", None, None)
    # From here a block for each transaction: what the executor sends again is mined at once.
    await chain.rpc.automine(True)
    [tx] = await wait_txs(pool, action_id, lambda t: t[0]["status"] != "sent")
    assert tx["status"] == "mined" and tx["block_number"] == first_block + 1
    await chain.rpc.mine(1)
    row = await wait_status(pool, action_id, "confirmed")
    await running.finish()

    # one transaction: the same signed bytes, mined in the new chain; no replacement, no retry
    [final] = await transactions(pool, action_id)
    assert final["id"] == tx["id"] and final["tx_hash"] == tx["tx_hash"]
    assert final["status"] == "confirmed"
    assert await on_chain(chain, final["tx_hash"]) == first_block + 1
    assert final["block_hash"] == await block_hash(chain, first_block + 1)
    assert row["tx_hash"] == final["tx_hash"] and row["attempts"] == 0
    assert int(row["gas_cost"]) == final["gas_used"] * int(final["effective_gas_price"]) > 0
    assert await chain.token_balance(RECIPIENT) == 6_000_007
    assert await chain.token_balance(chain.relayer) == relayer_tokens - 6_000_007
    assert await chain.nonce(chain.relayer) == relayer_nonce + 1
    sent, confirmed = await results(pool, settings, action_id)
    assert (sent["event"], sent["tx_hash"]) == ("sent", final["tx_hash"])
    assert (confirmed["event"], confirmed["tx_hash"]) == ("confirmed", final["tx_hash"])
    assert confirmed["block_number"] == first_block + 1
    assert int(confirmed["amount_sent"]) == 6_000_007


async def test_a_nonce_taken_by_a_foreign_transaction_is_reconciled_and_the_action_done_once(
    make_chain: Any, pool: Pool, settings: Settings, executing: Any, infra: dict[str, str]
) -> None:
    # stuck_after 30 s: never replaced here
    paused = await paused_prefill(make_chain, pool, settings, executing, 9_000_003)
    chain, action_id, running = paused.chain, paused.action_id, paused.running
    relayer_nonce, relayer_tokens = paused.relayer_nonce, paused.relayer_tokens
    [ours] = await wait_txs(pool, action_id, lambda t: len(t) == 1 and t[0]["status"] == "sent")
    assert ours["nonce"] == relayer_nonce

    # An operator, by hand with the relayer key, cancels it (same nonce, higher fees, a
    # 0-value transfer to itself) and sends one more: the chain's nonce is then two past
    # ours, one past what the executor would hand out next.
    tip = 2 * int(ours["max_priority_fee_per_gas"]) + 10**9
    fees = {"max_fee": 2 * int(ours["max_fee_per_gas"]) + tip, "tip": tip}
    for nonce in (relayer_nonce, relayer_nonce + 1):
        raw = relayer_signed(infra, chain, nonce=nonce, to=chain.relayer, **fees)
        await send_raw(chain, raw)
    assert not await known_to_node(chain, ours["tx_hash"])
    await chain.rpc.mine(2)  # at confirmation depth: a reorg can no longer give it back
    assert await chain.nonce(chain.relayer) == relayer_nonce + 2
    assert await chain.token_balance(RECIPIENT) == 0

    txs = await wait_txs(pool, action_id, lambda t: len(t) > 1 and t[1]["status"] != "signed")
    # reconciled with the chain: the retry takes nonce + 2, not the stored nonce + 1
    statuses = [(t["nonce"], t["status"]) for t in txs]
    assert statuses == [(relayer_nonce, "dropped"), (relayer_nonce + 2, "sent")], statuses
    dropped, retry = txs
    assert dropped["tx_hash"] == ours["tx_hash"]
    await chain.rpc.mine(2)
    row = await wait_status(pool, action_id, "confirmed")
    await running.finish()

    txs = await transactions(pool, action_id)
    assert [(t["tx_hash"], t["status"]) for t in txs] == [
        (ours["tx_hash"], "dropped"), (retry["tx_hash"], "confirmed"),
    ]  # fmt: skip
    assert await on_chain(chain, ours["tx_hash"]) is None
    assert await on_chain(chain, retry["tx_hash"]) == txs[1]["block_number"]
    assert row["tx_hash"] == retry["tx_hash"] and int(row["amount_sent"]) == 9_000_003
    assert row["attempts"] == 1 and "used by another transaction" in row["last_error"]
    assert await chain.token_balance(RECIPIENT) == 9_000_003
    assert await chain.token_balance(chain.relayer) == relayer_tokens - 9_000_003
    assert await chain.nonce(chain.relayer) == relayer_nonce + 3
    stored = await pool.fetchval(
        "SELECT next_nonce FROM signer_nonces WHERE chain = $1 AND signer = $2",
        chain.name, chain.relayer,
    )  # fmt: skip
    assert stored == relayer_nonce + 3
    # `sent` once, with the first broadcast (documented); `confirmed` once, with the retry
    sent, confirmed = await results(pool, settings, action_id)
    assert (sent["event"], sent["tx_hash"]) == ("sent", ours["tx_hash"])
    assert (confirmed["event"], confirmed["tx_hash"]) == ("confirmed", retry["tx_hash"])
    assert confirmed["block_number"] == txs[1]["block_number"]


async def test_a_foreign_transaction_on_our_nonce_reorged_out_for_ours_does_not_pay_twice(
    make_chain: Any,
    pool: Pool,
    settings: Settings,
    executing: Any,
    infra: dict[str, str],
    *,
    ticks: Ticks,
) -> None:
    # stuck_after 30 s: never replaced here
    paused = await paused_prefill(make_chain, pool, settings, executing, 5_000_009)
    chain, action_id, running = paused.chain, paused.action_id, paused.running
    relayer_nonce, relayer_tokens = paused.relayer_nonce, paused.relayer_tokens
    [ours] = await wait_txs(pool, action_id, lambda t: len(t) == 1 and t[0]["status"] == "sent")

    # An operator's cancel takes our nonce and is mined: one block deep of the two.
    tip = 2 * int(ours["max_priority_fee_per_gas"]) + 10**9
    fees = {"max_fee": 2 * int(ours["max_fee_per_gas"]) + tip, "tip": tip}
    cancel = relayer_signed(infra, chain, nonce=relayer_nonce, to=chain.relayer, **fees)
    cancel_hash = await send_raw(chain, cancel)
    await chain.rpc.mine(1)
    height = await chain.rpc.block_number()
    assert await on_chain(chain, cancel_hash) == height
    await ticks.more(5)  # five polls: the executor sees the nonce used above its depth
    [ours] = await transactions(pool, action_id)
    assert ours["status"] == "sent"  # not given up for a nonce that a reorg may give back

    # A one-block reorg: the other fork's block holds our transaction instead of the cancel.
    await chain.rpc.rpc("anvil_reorg", 1, [["0x" + bytes(ours["raw_tx"]).hex(), 0]])
    assert await on_chain(chain, ours["tx_hash"]) == height
    assert await on_chain(chain, cancel_hash) is None
    await chain.rpc.mine(2)
    row = await wait_status(pool, action_id, "confirmed")
    await ticks.more(5)  # five polls: time for anything further to go out
    await running.finish()

    [final] = await transactions(pool, action_id)
    assert (final["tx_hash"], final["status"]) == (ours["tx_hash"], "confirmed")
    assert final["block_number"] == height and row["tx_hash"] == ours["tx_hash"]
    assert row["attempts"] == 0
    assert await chain.token_balance(RECIPIENT) == 5_000_009
    assert await chain.token_balance(chain.relayer) == relayer_tokens - 5_000_009
    assert await chain.nonce(chain.relayer) == relayer_nonce + 1
    assert await pending_nonce(chain, chain.relayer) == relayer_nonce + 1
    sent, confirmed = await results(pool, settings, action_id)
    assert (sent["event"], sent["tx_hash"]) == ("sent", ours["tx_hash"])
    assert (confirmed["event"], confirmed["tx_hash"]) == ("confirmed", ours["tx_hash"])
    assert confirmed["block_number"] == height


# --- processes: crash safety and the standby ------------------------------------------


def config_file(chain: Chain, tmp_path: Path, **execution: Any) -> Path:
    s = chain.settings
    section = s.chains[chain.name]
    extra = "".join(f"{k} = {v!r}\n" for k, v in execution.items())
    text = (
        'environment = "test"\n'
        f'[database]\nurl = "{s.database.url.get_secret_value()}"\n'
        f'[kafka]\nbootstrap_servers = "{s.kafka.bootstrap_servers}"\n'
        f'topic_prefix = "{s.kafka.topic_prefix}"\n'
        f"[execution]\npoll_interval = 0.2\nretry_backoff = 0.0\n{extra}"
        f'[chains.{chain.name}]\nchain_id = {chain.chain_id}\nnetwork = "test"\n'
        f'rpc_urls = ["{section.rpc_urls[0]}"]\nconfirmations = 2\n'
        f'relayer = "{section.relayer}"\n'
        f'[[chains.{chain.name}.tokens]]\naddress = "{chain.usdc}"\nsymbol = "USDC"\n'
        'name = "Test USD Coin"\ndecimals = 6\ncategory = "stablecoin"\n'
    )
    path = tmp_path / f"{chain.name}.toml"
    path.write_text(text)
    return path


def process_env(infra: dict[str, str], settings: Settings, **extra: str) -> dict[str, str]:
    """The executor's environment: the dev keys, and the mnemonic of the test database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENTD")}
    env.update(
        INTENTD_RELAYER_KEY_FILE=infra["INTENTD_RELAYER_KEY_FILE"],
        INTENTD_GAS_TANK_KEY_FILE=infra["INTENTD_GAS_TANK_KEY_FILE"],
        INTENTD_HD_MNEMONIC=settings.mnemonic(),
        **extra,
    )
    return env


def start_executor(
    config: Path, chain: Chain, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "intentd", "--config", str(config), "execute",
             "--chain", chain.name],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip


async def wait_exit(process: subprocess.Popen[bytes], timeout: float, log: Path) -> int:
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"executor did not exit in time:\n{log.read_text()[-3000:]}")
        await asyncio.sleep(0.1)
    return process.returncode


async def stop_process(process: subprocess.Popen[bytes], log: Path) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    code = await wait_exit(process, 30, log)
    assert code in (0, -signal.SIGKILL), log.read_text()[-3000:]


@pytest.mark.parametrize(
    "point", ["executor.after_record", "executor.after_send", "executor.awaiting_receipt"]
)
async def test_a_crash_at_any_point_leaves_one_effective_transaction_per_action(
    point: str,
    *,
    make_chain: Any,
    pool: Pool,
    settings: Settings,
    infra: dict[str, str],
    tmp_path: Path,
) -> None:
    chain: Chain = await make_chain()
    prefill, _, _ = await seed_action(
        pool, settings, chain, kind="prefill", token=chain.usdc, amount=2_000_000,
        signer_kind="relayer",
    )  # fmt: skip
    sweep_to = "0x" + "6b" * 20
    sweep, _, address = await seed_action(
        pool, settings, chain, kind="relayer_refund", token=chain.usdc, amount=5_000_000,
        signer_kind="intent", to=sweep_to,
    )  # fmt: skip
    await chain.mint(address, 5_000_000)
    relayer_nonce = await chain.nonce(chain.relayer)
    tank_nonce = await chain.nonce(chain.gas_tank)
    config = config_file(chain, tmp_path)
    log = tmp_path / "executor.log"

    # Crash at every occurrence of the point: restart with it armed until both are done.
    crashes = 0
    for _ in range(12):
        process = start_executor(
            config, chain, process_env(infra, settings, INTENTD_CRASH_AT=point), log
        )
        while process.poll() is None:
            if await both_confirmed(pool, prefill, sweep):
                break
            await asyncio.sleep(0.1)
        if process.poll() is None:
            await stop_process(process, log)
            break
        assert await wait_exit(process, 10, log) == CRASH_EXIT_CODE, log.read_text()[-3000:]
        crashes += 1
    else:
        raise AssertionError(f"not done after {crashes} crashes:\n{log.read_text()[-3000:]}")
    # prefill transfer, gas top-up, sweep transfer: each passed the point once at least
    assert crashes >= (3 if point != "executor.awaiting_receipt" else 1), crashes

    assert await chain.token_balance(RECIPIENT) == 2_000_000
    assert await chain.token_balance(sweep_to) == 5_000_000
    assert await chain.nonce(chain.relayer) == relayer_nonce + 1
    assert await chain.nonce(chain.gas_tank) == tank_nonce + 1
    assert await chain.nonce(address) == 1
    for action_id in (prefill, sweep):
        events = [r["event"] for r in await results(pool, settings, action_id)]
        assert events == ["sent", "confirmed"], (point, action_id, events)
        confirmed = [t for t in await transactions(pool, action_id) if t["status"] == "confirmed"]
        assert len({t["purpose"] for t in confirmed}) == len(confirmed)  # one per purpose


async def both_confirmed(pool: Pool, *action_ids: int) -> bool:
    statuses = await pool.fetch(
        "SELECT status FROM actions WHERE id = ANY($1::bigint[])", action_ids
    )
    return all(r["status"] == "confirmed" for r in statuses)


async def test_a_standby_takes_over_when_the_active_executor_is_killed(
    make_chain: Any, pool: Pool, settings: Settings, infra: dict[str, str], tmp_path: Path
) -> None:
    chain: Chain = await make_chain()
    config = config_file(chain, tmp_path)
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    active = start_executor(config, chain, process_env(infra, settings), log_a)
    await wait_log(log_a, "executor active")
    standby = start_executor(config, chain, process_env(infra, settings), log_b)
    try:
        await wait_log(log_b, "waiting as a standby")
        active.kill()  # kill -9: no cleanup; PostgreSQL ends the session and its lock
        await wait_exit(active, 10, log_a)
        killed_at = time.monotonic()
        await wait_log(log_b, "executor active", timeout=10)
        took_over = time.monotonic() - killed_at
        action_id, _, _ = await seed_action(
            pool, settings, chain, kind="prefill", token=chain.usdc, amount=1_000_000,
            signer_kind="relayer",
        )  # fmt: skip
        await wait_status(pool, action_id, "confirmed", timeout=30)
    finally:
        await stop_process(standby, log_b)
    assert took_over < 5
    assert await chain.token_balance(RECIPIENT) == 1_000_000


async def test_a_standby_executor_takes_over_under_load_and_sends_nothing_twice(
    make_chain: Any, pool: Pool, settings: Settings, infra: dict[str, str], tmp_path: Path
) -> None:
    """``kill -9`` of the active executor while prefills are in flight: the standby
    takes the chain, every prefill is paid once and the relayer's nonce moved once per
    prefill. The takeover time is printed (``pytest -s``)."""
    chain: Chain = await make_chain()
    config = config_file(chain, tmp_path)
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    relayer_nonce = await chain.nonce(chain.relayer)
    active = start_executor(config, chain, process_env(infra, settings), log_a)
    standby: subprocess.Popen[bytes] | None = None
    actions: list[int] = []

    async def seed(count: int) -> None:
        for _ in range(count):
            action_id, _, _ = await seed_action(
                pool, settings, chain, kind="prefill", token=chain.usdc, amount=1_000_000,
                signer_kind="relayer",
            )  # fmt: skip
            actions.append(action_id)
            await asyncio.sleep(0.1)

    try:
        await wait_log(log_a, "executor active")
        standby = start_executor(config, chain, process_env(infra, settings), log_b)
        await wait_log(log_b, "waiting as a standby")
        await seed(6)
        await wait_status(pool, actions[0], "confirmed", timeout=30)  # the rest in flight
        killed_at = time.time()
        active.kill()
        await wait_exit(active, 10, log_a)
        await wait_log(log_b, "executor active", timeout=10)
        took_over = _logged_at(log_b, "executor active") - killed_at
        await seed(6)
        for action_id in actions:
            await wait_status(pool, action_id, "confirmed", timeout=60)
    finally:
        if standby is not None:
            await stop_process(standby, log_b)
        await stop_process(active, log_a)
    print(f"\nexecutor standby takeover after kill -9 with prefills in flight: {took_over:.2f} s")
    assert took_over < 10
    assert await chain.token_balance(RECIPIENT) == len(actions) * 1_000_000
    assert await chain.nonce(chain.relayer) == relayer_nonce + len(actions)
    for action_id in actions:
        confirmed = [t for t in await transactions(pool, action_id) if t["status"] == "confirmed"]
        assert len(confirmed) == 1, (action_id, confirmed)


def _logged_at(log: Path, event: str) -> float:
    """Wall-clock time of the first `event` in a JSON log."""
    for line in log.read_bytes().splitlines():
        if line.startswith(b"{") and orjson.loads(line).get("event") == event:
            return datetime.fromisoformat(orjson.loads(line)["timestamp"]).timestamp()
    raise AssertionError(f"{event!r} not in {log}")


async def wait_log(log: Path, text: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not (log.exists() and text in log.read_text()):
        assert time.monotonic() < deadline, f"{text!r} not logged:\n{log.read_text()[-3000:]}"
        await asyncio.sleep(0.1)


async def test_the_api_with_the_xpub_alone_creates_intents_the_executor_can_sweep(
    make_chain: Any,
    pool: Pool,
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    executing: Any,
) -> None:
    """Least privilege: the API holds the extended public key only; the executor, with
    the mnemonic, signs for the addresses the API handed out."""
    chain: Chain = await make_chain()
    xpub = chain.settings.intent_keys().xpub.serialize()
    api_settings = make_settings(
        hd_mnemonic=None,
        hd_xpub=xpub,
        chains={
            chain.name: chain.settings.chains[chain.name].model_dump(),
            "ARBITRUM_TESTNET": chain_section(infra, "ARBITRUM_TESTNET", 421614),
        },
    )
    assert api_settings.hd_mnemonic is None
    key = generate_key("test")
    async with pool.acquire() as conn:
        client = await clients.create(conn, "xpub-only")
        await api_keys.insert_key(conn, key, client=client, mode="test", rate_limit=None)
    body = {
        "amount": "3", "tokenIn": chain.usdc, "source_chain": chain.name,
        "destination_chain": "ARBITRUM_TESTNET", "recipient": RECIPIENT,
        "refund_address": RECIPIENT,
    }  # fmt: skip
    async with aiohttp.ClientSession() as http:
        async for url in serve(api_settings, pool):
            async with http.post(
                f"{url}/api/v1/intents", json=body, headers={"Authorization": f"Bearer {key.key}"}
            ) as response:
                assert response.status == 201, await response.text()
                record = await response.json()
    address = record["intent_address"].lower()
    intent = await pool.fetchrow(
        "SELECT id, address_index FROM intents WHERE intent_address = $1", address
    )
    assert intent["address_index"] == record["intent_nonce"]

    await chain.mint(address, 3_000_000)
    action_id = await pool.fetchval(
        """
        INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address, status,
                             signer_kind, signer_index, gas_from_amount)
        VALUES ($1, 'user_refund', 1, $2, $3, 3000000, $4, 'ready', 'intent', $5, false)
        RETURNING id
        """,
        intent["id"], chain.name, chain.usdc, RECIPIENT, intent["address_index"],
    )  # fmt: skip
    running = executing(chain)
    await wait_status(pool, action_id, "confirmed")
    await running.finish()
    assert await chain.token_balance(address) == 0
    assert await chain.token_balance(RECIPIENT) == 3_000_000
    [_, transfer] = await transactions(pool, action_id)
    assert transfer["signer"] == address
