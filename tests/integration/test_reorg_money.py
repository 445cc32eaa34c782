"""A reorg that moves transactions changes nothing about money (own anvil, ``anvil_reorg``).

Four intents in the states an operator meets a reorg in: *pending partial* (a first
payment), *funded before prefill*, *completed with its top-up moved* and *a late
deposit moved* (its refund already sent). The block holding their payments is
replaced by ``anvil_reorg`` at depths 1..5 around the confirmation depth (2), its
transactions mined again at other heights and positions (after other transfers).

The poller runs for real (JSON-RPC to the anvil, PostgreSQL store, batches of one
block so that a retraction can precede the re-inclusion); its messages go straight to
the lifecycle's handlers. The executor is simulated after each batch, as the chain
stands at that batch: a prefill always succeeds; a transfer from an intent address
succeeds only if the address holds the funds at that block (else it "fails for
good", as the real one would revert). Every recipient, relayer, fee account and
refund address must end with exactly what the same payments give without a reorg.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.conftest import chain_section
from tests.integration.poller_chain import section
from tests.lifecycle_calls import apply_action_result, apply_deposit, apply_retraction
from tests.support import new_intent

from intentd.adapters.evm.chain_reader import EvmChainReader
from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.cursor_store import PostgresPollerStore
from intentd.adapters.postgres.native_intents import PostgresOpenNativeIntents
from intentd.contract.record import IntentRow
from intentd.indexer.poller import Poller
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.messages import (
    ActionResultMessage,
    DepositMessage,
    OutgoingMessage,
    action_result_id,
    decode_chain_message,
)
from intentd.settings import Settings
from intentd_dev.devchain import MINT, TRANSFER, DevChain, call_data, tx
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil

pytestmark = pytest.mark.integration
SOURCE, DESTINATION = "BASE_TESTNET", "ARBITRUM_TESTNET"
CONFIRMATIONS = 2
UNIT = 10**6
UNWATCHED = "0x" + "3" * 40


@dataclass
class Env:
    anvil: AnvilProcess
    rpc: DevChain
    usdc: str
    senders: list[str]
    settings: Settings
    pool: Pool


@pytest.fixture
async def env(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], make_settings: Callable[..., Settings]
) -> AsyncIterator[Env]:
    own, pool = own_stack
    anvil = await asyncio.to_thread(start_anvil, 84532)
    try:
        async with DevChain(anvil.url) as rpc:
            deployer, *senders = (await rpc.accounts())[:8]
            usdc = await rpc.deploy_token(deployer, "Test USD Coin", "USDC", 6)
            usdt = await rpc.deploy_token(deployer, "Test Tether USD", "USDT", 6)
            await rpc.send_many([
                tx(s, usdc, data=call_data(MINT, s, 1_000 * UNIT)) for s in senders
            ])  # fmt: skip
            await rpc.mine(1)
            await rpc.automine(False)  # blocks are mined by the test, with what it sent
            source = section(
                84532, [anvil.url], usdc, usdt, confirmations=CONFIRMATIONS, batch_size=1,
                relayer=infra["INTENTD_RELAYER_ADDRESS"],
                fee_account=infra["INTENTD_FEE_ACCOUNT_ADDRESS"],
            )  # fmt: skip
            settings = make_settings(
                hd_mnemonic=own.mnemonic(),
                database={"url": own.database.url.get_secret_value()},
                fees={"app_fee_bps": 100},
                chains={
                    SOURCE: source,
                    DESTINATION: chain_section(infra, DESTINATION, 421614),
                },
            )
            yield Env(anvil, rpc, usdc, senders, settings, pool)
    finally:
        await asyncio.to_thread(anvil.stop)


@dataclass
class Ledger:
    """What the simulated executor moved, per intent role: (kind, to, token) -> amount."""

    moved: dict[str, Counter[tuple[str, str, str]]] = field(default_factory=dict)
    failed: list[tuple[str, str]] = field(default_factory=list)
    spent: Counter[str] = field(default_factory=Counter)
    """Base units sent from each intent address so far."""


class Simulation:
    """The poller over the anvil, the lifecycle's handlers, a simulated executor."""

    def __init__(self, env: Env, roles: dict[int, str]) -> None:
        self.env = env
        self.roles = roles
        self.ledger = Ledger()
        self.paused: dict[str, set[str]] = {}
        """Per role, the signer kinds whose actions wait (the executor has not got to them)."""
        config = env.settings.chains[SOURCE]
        self.reader = EvmChainReader(
            JsonRpcClient(SOURCE, config.rpc_urls, timeout=5), [env.usdc], max_log_range=100
        )
        self.poller = Poller(
            config,
            reader=self.reader,
            store=PostgresPollerStore(env.pool, SOURCE),
            publisher=self,
            watched=WatchedIntents(PostgresOpenNativeIntents(env.pool, SOURCE)),
            topic="unused",
        )

    async def publish_all(self, messages: Iterable[OutgoingMessage]) -> int:
        """The lifecycle applies the batch; then the executor acts on the chain as of it."""
        batch = list(messages)
        now = datetime.now(UTC)
        async with self.env.pool.acquire() as conn:
            for item in batch:
                message = decode_chain_message(item.value)
                if isinstance(message, DepositMessage):
                    await apply_deposit(conn, self.env.settings, message, now=now)
                else:
                    await apply_retraction(conn, self.env.settings, message, now=now)
        await self.execute(self.poller.cursor.number + 1)
        return len(batch)

    async def catch_up(self) -> None:
        if not getattr(self, "_started", False):
            await self.poller.start()
            self._started = True
        head = await self.env.rpc.block_number() - (CONFIRMATIONS - 1)
        stop = asyncio.Event()
        task = asyncio.create_task(self.poller.run(stop))
        while self.poller.cursor.number < head:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        stop.set()
        await task
        await self.execute(head)

    async def execute(self, block: int) -> None:
        """Carry out every ready action (and confirm those in flight), as of ``block``."""
        while True:
            rows = await self.env.pool.fetch(
                "SELECT a.id, a.intent_id, a.kind, a.chain, a.token, a.amount, a.to_address,"
                " a.status, a.signer_kind, i.intent_address FROM actions a"
                " JOIN intents i ON i.id = a.intent_id"
                " WHERE a.status IN ('ready', 'submitted') AND a.intent_id = ANY($1::bigint[])"
                " ORDER BY a.id",
                list(self.roles),
            )
            if not rows:
                return
            rows = [
                r
                for r in rows
                if r["signer_kind"] not in self.paused.get(self.roles[r["intent_id"]], set())
            ]
            if not rows:
                return
            for row in rows:
                await self._execute(dict(row), block)

    async def _execute(self, action: dict[str, Any], block: int) -> None:
        amount = int(action["amount"])
        address = action["intent_address"]
        if action["signer_kind"] == "intent":
            held = await self._balance(address, block)
            if held < self.ledger.spent[address] + amount:
                await self._status(action, "failed")
                await self._result(action, "failed", error="transfer amount exceeds balance")
                self.ledger.failed.append((self.roles[action["intent_id"]], action["kind"]))
                return
            self.ledger.spent[address] += amount
        if action["status"] == "ready":
            await self._result(action, "sent")
        await self._status(action, "confirmed")
        await self._result(action, "confirmed", amount_sent=amount, gas_cost=0)
        key = (action["kind"], action["to_address"], action["token"])
        self.ledger.moved.setdefault(self.roles[action["intent_id"]], Counter())[key] += amount

    async def _status(self, action: dict[str, Any], status: str) -> None:
        """What the executor records of its action (the lifecycle only reads the result)."""
        await self.env.pool.execute(
            "UPDATE actions SET status = $2 WHERE id = $1", action["id"], status
        )

    async def _balance(self, owner: str, block: int) -> int:
        data = "0x70a08231" + owner[2:].rjust(64, "0")
        answer = await self.env.rpc.rpc("eth_call", {"to": self.env.usdc, "data": data}, hex(block))
        return int(answer, 16)

    async def _result(self, action: dict[str, Any], event: str, **fields: Any) -> None:
        message = ActionResultMessage(
            id=action_result_id(action["id"], event),
            action_id=action["id"],
            intent_id=action["intent_id"],
            action_kind=action["kind"],
            event=event,
            chain=action["chain"],
            tx_hash="0x" + f"{action['id']:064x}",
            block_number=1 if event == "confirmed" else None,
            **fields,
        )
        async with self.env.pool.acquire() as conn:
            await apply_action_result(conn, self.env.settings, message, now=datetime.now(UTC))

    async def close(self) -> None:
        await self.reader.close()


async def pay(env: Env, payments: list[tuple[str, IntentRow, int]]) -> list[str]:
    """One block of USDC payments, each from its own sender (any order stays valid)."""
    sent = await env.rpc.send_many([
        tx(env.senders[i], env.usdc, data=call_data(TRANSFER, row.intent_address, amount))
        for i, (_, row, amount) in enumerate(payments)
    ])  # fmt: skip
    await env.rpc.mine(1)
    return list(sent)


async def outcome(env: Env, depth: int) -> tuple[dict[str, Any], Ledger]:
    """Run the scenario (``depth`` 0: without a reorg); the final state of each role."""
    total = "10"  # each intent wants 10 USDC + 1 % fee
    rows = {
        role: await new_intent(env.pool, env.settings, amount=total, chain=SOURCE)
        for role in ("partial", "funded", "top_up", "late")
    }
    sim = Simulation(env, {row.id: role for role, row in rows.items()})
    due = rows["top_up"].total_due
    try:
        # before: the top-up intent's first part, the late one paid in full
        await pay(env, [("top_up", rows["top_up"], due - 4 * UNIT), ("late", rows["late"], due)])
        await env.rpc.mine(CONFIRMATIONS)
        await sim.catch_up()  # the "late" intent completes (simulated prefill)
        # block B: the payments a reorg will move
        moved = [
            ("partial", rows["partial"], 4 * UNIT),
            ("funded", rows["funded"], due),
            ("top_up", rows["top_up"], 4 * UNIT),
            ("late", rows["late"], 1 * UNIT),
        ]
        # the funded intent's prefill and the topped-up intent's sweeps are not done yet
        sim.paused = {"funded": {"relayer", "intent"}, "top_up": {"intent"}}
        hashes = await pay(env, moved)
        await env.rpc.mine(max(depth - 1, 0))
        await sim.catch_up()
        sim.paused = {}
        if depth:
            raws = [await env.rpc.rpc("eth_getRawTransactionByHash", h) for h in hashes]
            spare = env.senders[len(moved) : len(moved) + 2]
            fillers = [await signed_filler(env, sender) for sender in spare]
            # mined again at other heights, after other transfers of the same token
            plan = [[f, 0] for f in fillers] + [
                [raw, (depth - 1 - i) % depth] for i, raw in enumerate(raws)
            ]
            await env.rpc.rpc("anvil_reorg", depth, plan)
        await env.rpc.mine(CONFIRMATIONS + 1)
        await sim.catch_up()
        state = {}
        for role, row in rows.items():
            fresh = await env.pool.fetchrow(
                "SELECT status, received FROM intents WHERE id = $1", row.id
            )
            held = await env.pool.fetchval(
                "SELECT count(*) FROM actions WHERE intent_id = $1 AND status = 'held'", row.id
            )
            credited = await env.pool.fetch(
                "SELECT amount, disposition FROM deposits WHERE intent_id = $1"
                " AND disposition <> 'retracted' ORDER BY amount",
                row.id,
            )
            state[role] = (
                fresh["status"],
                int(fresh["received"]),
                held,
                [(int(d["amount"]), d["disposition"]) for d in credited],
            )
        return state, sim.ledger
    finally:
        await sim.close()


async def signed_filler(env: Env, sender: str) -> str:
    """A raw USDC transfer to an unwatched address (it shifts the moved logs' positions)."""
    nonce = await env.rpc.rpc("eth_getTransactionCount", sender, "latest")
    request = {
        **tx(sender, env.usdc, data=call_data(TRANSFER, UNWATCHED, 1)),
        "nonce": nonce,
        "chainId": hex(84532),
        "maxFeePerGas": hex(10**10),
        "maxPriorityFeePerGas": hex(1),
    }
    signed: Any = await env.rpc.rpc("eth_signTransaction", request)
    return str(signed if isinstance(signed, str) else signed["raw"])


@pytest.mark.timeout(240)
@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
async def test_a_reorg_that_moves_every_payment_changes_nothing_about_money(
    env: Env, depth: int
) -> None:
    expected_state, expected = await outcome(env, 0)
    state, ledger = await outcome(env, depth)
    assert ledger.failed == []
    assert state == expected_state
    assert ledger.moved == expected.moved
    assert {role: s[2] for role, s in state.items()} == dict.fromkeys(state, 0)  # none held
