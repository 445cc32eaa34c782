"""RPC calls and wall time of one trigger-processing call over a week of Base blocks.

``python -m bench trigger-processing`` (needs ``make infra-up`` for PostgreSQL; it
starts its own anvil). It builds a chain of ``--blocks`` blocks (302,400: 7 days of
Base at 2 s) whose first block is ``blocks * 2`` seconds ago, with ``--noise``
token transfers to other addresses spread over it, creates an intent (USDC, or the
native coin with ``--native``) at the chain's start in a scratch database, pays it
in the first blocks and again in the middle, and times one
``Processor.trigger`` call, counting the JSON-RPC calls by method (and full blocks
apart). ``--until-complete`` repeats the call until the window is scanned and prints
the totals. Figures are printed, nothing asserted.

It runs on older code as well (it counts at the HTTP transport and sets only the
settings the code knows), so the same command measures before and after a change:
``PYTHONPATH=<old checkout>/src:. python -m bench trigger-processing``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import orjson

from bench.poller_env import RELAYER, bench_database, bench_settings, infra_env, on_every_post
from intentd.adapters.postgres import create_pool, intent_store
from intentd.adapters.postgres.intent_inserts import PostgresIntentStore
from intentd.api.processing import Processor
from intentd.custody import IntentKeys
from intentd.intents.service import IntentRequest, create_intent
from intentd.intents.writer import IntentWriter
from intentd.lifecycle.chain_book import ChainBook
from intentd.settings import NATIVE_TOKEN, Settings
from intentd.settings.sections import ApiConfig
from intentd_dev.devchain import MINT, DevChain, call_data
from intentd_dev.devinfra.anvil import start_anvil

CHAIN, CHAIN_ID = "BENCH_BASE", 31_998
DESTINATION = "BENCH_DEST"  # only its settings are read
BLOCK_SECONDS = 2
MINE_STEP = 50_000
OTHER = "0x" + "ab" * 20
PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


class Counted:
    """Counts the JSON-RPC calls of every client in this process, by method."""

    def __init__(self) -> None:
        self.methods: Counter[str] = Counter()
        self.full_blocks = 0
        self.posts = 0
        on_every_post(self.seen)

    async def seen(self, calls: list[dict[str, Any]]) -> None:
        self.posts += 1
        for call in calls:
            self.methods[call["method"]] += 1
            params = call["params"]
            if call["method"] == "eth_getBlockByNumber" and params[1] is True:
                self.full_blocks += 1

    def reset(self) -> None:
        self.methods.clear()
        self.full_blocks = self.posts = 0


def settings_for(env: dict[str, str], url: str, rpc: str, usdc: str) -> Settings:
    token = {"decimals": 6, "category": "stablecoin", "address": usdc, "symbol": "USDC"}
    chain = {
        "network": "test", "rpc_urls": [rpc], "confirmations": 1, "poll_interval": 1,
        "relayer": RELAYER, "tokens": [{**token, "name": "Test USD Coin"}],
    }  # fmt: skip
    api: dict[str, Any] = {}
    known = ApiConfig.model_fields
    if "trigger_cooldown" in known:  # --until-complete calls again at once
        api["trigger_cooldown"] = 0
    if "trigger_timeout" in known:
        api["trigger_timeout"] = 600
    return bench_settings(env, url, chain, (CHAIN, DESTINATION), CHAIN_ID, api=api)


async def build_chain(rpc: DevChain, blocks: int, noise: int, payer: str, usdc: str) -> None:
    """Up to block ``blocks``, ``noise`` USDC mints to another address among them. The
    empty blocks are mined without anvil's timestamp interval (five times slower on a
    busy machine): their times are not 2 s apart, which changes nothing here, since the
    intent's window starts at block 0 and what a call costs is its number of blocks."""
    every = max(blocks // max(noise, 1), 1)
    made = await rpc.block_number()
    sent = 0
    while made < blocks:
        if sent < noise:
            await two_seconds_on(rpc)
            await rpc.receipt(await rpc.send(payer, usdc, data=call_data(MINT, OTHER, 1)))
            sent += 1
        step = min(every - 1 if sent < noise else MINE_STEP, blocks - made - 1)
        if step > 0:
            await rpc.rpc("anvil_mine", hex(step))
        made = await rpc.block_number()


async def two_seconds_on(rpc: DevChain) -> None:
    """The next block (a transaction's) comes 2 s after the last, not at the wall clock."""
    last = await rpc.rpc("eth_getBlockByNumber", "latest", False)
    await rpc.rpc("evm_setNextBlockTimestamp", int(last["timestamp"], 16) + BLOCK_SECONDS)


async def pay(rpc: DevChain, payer: str, token: str, to: str, amount: int) -> None:
    await two_seconds_on(rpc)
    if token == NATIVE_TOKEN:
        await rpc.receipt(await rpc.send(payer, to, value=amount))
    else:
        await rpc.receipt(await rpc.send(payer, token, data=call_data(MINT, to, amount)))


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    env = infra_env()
    start = int(time.time()) - args.blocks * BLOCK_SECONDS
    # Without history anvil mines several times faster; a native intent's balance
    # reconciliation reads past balances, so it keeps the states of every block.
    history = ["--prune-history"] + ([str(args.blocks + 1000)] if args.native else [])
    anvil = await asyncio.to_thread(
        start_anvil, CHAIN_ID, extra_args=["--timestamp", str(start), *history]
    )
    counted = Counted()
    result: dict[str, Any] = {"blocks": args.blocks, "token": "native" if args.native else "USDC"}
    try:
        async with DevChain(anvil.url) as rpc, bench_database(env, 0) as url:
            deployer, payer = (await rpc.accounts())[:2]
            usdc = await rpc.deploy_token(deployer, "Test USD Coin", "USDC", 6)
            settings = settings_for(env, url, anvil.url, usdc)
            pool = await create_pool(url, max_size=4)
            try:
                genesis = await rpc.rpc("eth_getBlockByNumber", "0x0", False)
                created = datetime.fromtimestamp(int(genesis["timestamp"], 16), UTC)
                token = NATIVE_TOKEN if args.native else usdc
                row = await create_intent(
                    settings,
                    IntentWriter(PostgresIntentStore(pool), IntentKeys(settings.mnemonic())),
                    IntentRequest(
                        amount="10",
                        token_in=token,
                        source_chain=CHAIN,
                        destination_chain=DESTINATION,
                        recipient=PAYEE,
                        refund_address=PAYEE,
                        expires_in=7 * 86_400,
                    ),
                    client_id=UUID(settings.intents.default_client_id),
                    now=created,
                )
                # The store stamps created_at itself: the intent is made a week old here.
                await pool.execute(
                    "UPDATE intents SET created_at = $2 WHERE id = $1", row.id, created
                )
                found = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
                assert found is not None
                row = found
                unit = 10**12 if args.native else 1
                await pay(rpc, payer, token, row.intent_address, 4 * unit)
                began = time.perf_counter()
                await build_chain(rpc, args.blocks // 2, args.noise // 2, payer, usdc)
                await pay(rpc, payer, token, row.intent_address, 6 * unit)
                await build_chain(rpc, args.blocks, args.noise - args.noise // 2, payer, usdc)
                result["chain_build_seconds"] = round(time.perf_counter() - began, 1)
                result["head"] = await rpc.block_number()
                counted.reset()
                processor = Processor(
                    settings, _database(settings, pool), book=ChainBook.of_settings(settings)
                )
                try:
                    calls = 0
                    began = time.perf_counter()
                    while True:
                        outcome = await processor.trigger(row, now=datetime.now(UTC))
                        calls += 1
                        if calls == 1:
                            result["one_call"] = figures(counted, began, outcome)
                        if not args.until_complete or complete(outcome):
                            break
                    if args.until_complete:
                        result["until_complete"] = {
                            "calls": calls,
                            **figures(counted, began, outcome),
                        }
                finally:
                    await processor.close()
            finally:
                await pool.close()
    finally:
        await asyncio.to_thread(anvil.stop)
    return result


def complete(outcome: Any) -> bool:
    return bool(outcome.progress.scanned_to >= outcome.confirmed_head)


def figures(counted: Counted, began: float, outcome: Any) -> dict[str, Any]:
    return {
        "seconds": round(time.perf_counter() - began, 2),
        "rpc_calls": sum(counted.methods.values()),
        "http_posts": counted.posts,
        "by_method": dict(sorted(counted.methods.items())),
        "full_blocks": counted.full_blocks,
        "first_block": outcome.progress.first_block,
        "scanned_to": outcome.progress.scanned_to,
        "confirmed_head": outcome.confirmed_head,
        "deposits": len(outcome.deposits),
    }


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench trigger-processing")
    parser.add_argument("--blocks", type=int, default=302_400, help="7 days of 2 s blocks")
    parser.add_argument("--noise", type=int, default=200, help="USDC transfers to others")
    parser.add_argument("--native", action="store_true", help="a native-coin intent")
    parser.add_argument("--until-complete", action="store_true", help="call until scanned")
    args = parser.parse_args(argv)
    print(orjson.dumps(asyncio.run(main_async(args)), option=orjson.OPT_INDENT_2).decode())


def _database(settings: Settings, pool: Any) -> Any:
    """What ``Processor`` takes: the API's ``Database`` on ``pool``, or, on code older
    than it, the pool itself."""
    try:
        from intentd.api.connections import Database
    except ImportError:
        return pool
    return Database.of(settings, pool)
