"""Backfill throughput of the poller: sparse blocks/s and dense matched transfers/s.

``python -m bench backfill`` (needs ``make infra-up``: PostgreSQL and the Kafka dev
broker; it starts its own anvil). It builds a chain of ``--sparse`` empty blocks, then
``--dense`` blocks of ``--per-block`` ERC-20 mints to watched addresses each, puts
``--watched`` intents in a scratch database, and times the real poll loop (JSON-RPC
batches to anvil, decoding, publishing to Kafka, cursor transactions in PostgreSQL)
over each part from a cold start of its loop. Figures are printed, nothing asserted.

The poll loop includes the balance reconciliation of open native-coin intents
(``chain.evm.reconciliation``); ``--native N`` makes N of the watched intents native-coin
intents of the bench chain, open over the whole run, and counts the extra JSON-RPC
calls it makes (anvil then keeps the states of old blocks in memory).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import time
from dataclasses import dataclass
from typing import Any

from bench.poller_env import bench_database, bench_topic, infra_env, watched_address
from intentd.adapters.evm.chain_reader import open_chain
from intentd.adapters.evm.state_reader import EvmChainState
from intentd.adapters.kafka import KafkaPublisher
from intentd.adapters.postgres import create_pool
from intentd.adapters.postgres.cursor_store import PostgresPollerStore
from intentd.adapters.postgres.native_intents import PostgresOpenNativeIntents
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.indexer.poller import Poller
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.observability import configure_logging
from intentd.settings import NATIVE_TOKEN, ChainConfig, KafkaConfig
from intentd_dev.devchain import MINT, DevChain, call_data, disperse_data, tx
from intentd_dev.devinfra.anvil import start_anvil

CHAIN = "BENCH"
CHAIN_ID = 31_999


@dataclass
class Part:
    name: str
    blocks: int
    transfers: int
    seconds: float
    published: int
    batches: int = 0
    state_calls: int = 0
    """JSON-RPC calls of the balance reconciliation (balances and receipts)."""
    reconciling: float = 0.0
    """Seconds the poll loop spent in the balance reconciliation."""


class CountingState(EvmChainState):
    """Counts the reconciliation's JSON-RPC calls."""

    calls = 0

    async def balances(self, queries: Any) -> list[int]:
        self.calls += len(queries)
        return await super().balances(queries)

    async def receipts(self, tx_hashes: Any) -> Any:
        self.calls += len(tx_hashes)
        return await super().receipts(tx_hashes)


class CountingReconciliation(Reconciliation):
    """Counts the batches the reconciliation saw and the time it took."""

    batches = 0
    seconds = 0.0

    async def find(self, headers: Any, blocks: Any, reconciled: Any = None) -> Any:
        self.batches += 1
        started = time.perf_counter()
        try:
            return await super().find(headers, blocks, reconciled)
        finally:
            self.seconds += time.perf_counter() - started


async def build_sparse(chain: DevChain, blocks: int) -> None:
    left = blocks
    while left:
        step = min(left, 1000)
        await chain.mine(step)
        left -= step


async def build_dense(
    chain: DevChain, token: str, blocks: int, per_block: int, watched: int, *, per_tx: int
) -> int:
    """``blocks`` blocks of ``per_block`` mints to random watched addresses; returns the count.

    ``per_tx`` 1 sends each mint as its own transaction; more packs that many mints into
    one transaction of the disperse contract (a payout batch).
    """
    deployer, *senders = (await chain.accounts())[:6]
    disperse = await chain.deploy_disperse(deployer) if per_tx > 1 else ""
    pick = random.Random(per_tx)
    await chain.automine(False)
    try:
        for _ in range(blocks):
            recipients = [watched_address(pick.randint(1, watched)) for _ in range(per_block)]
            if per_tx == 1:
                txs = [
                    tx(senders[i % 5], token, data=call_data(MINT, to, 1), gas=120_000)
                    for i, to in enumerate(recipients)
                ]
            else:
                groups = [recipients[i : i + per_tx] for i in range(0, per_block, per_tx)]
                txs = [
                    tx(
                        senders[i % 5],
                        disperse,
                        data=disperse_data(token, group),
                        gas=60_000 * per_tx,
                    )
                    for i, group in enumerate(groups)
                ]
            await chain.send_many(txs)
            await chain.mine(1)
    finally:
        await chain.automine(True)
    return blocks * per_block


async def run_part(
    name: str,
    *,
    config: ChainConfig,
    url: str,
    kafka: KafkaConfig,
    topic: str,
    target: int,
    max_calls: int,
) -> Part:
    pool = await create_pool(url, max_size=3)
    publisher = KafkaPublisher(kafka, client_suffix="-bench")
    await publisher.start()
    client, reader = open_chain(config, max_calls=max_calls)
    state = CountingState(client)
    source = PostgresOpenNativeIntents(pool, CHAIN)
    reconciliation = CountingReconciliation(CHAIN, state, source)
    sent = 0
    original = publisher.publish_all

    async def counting(messages: Any) -> int:
        nonlocal sent
        count = await original(messages)
        sent += count
        return count

    publisher.publish_all = counting  # type: ignore[method-assign]
    try:
        poller = Poller(
            config,
            reader=reader,
            store=PostgresPollerStore(pool, CHAIN),
            publisher=publisher,
            watched=WatchedIntents(source),
            topic=topic,
            reconciliation=reconciliation,
        )
        loaded = time.perf_counter()
        await poller.start()
        first = poller.cursor.number
        seconds = time.perf_counter() - loaded
        print(f"  {name}: watched set loaded in {seconds:.2f} s; blocks {first + 1}..{target}")
        stop = asyncio.Event()
        started = time.perf_counter()
        task = asyncio.create_task(poller.run(stop))
        while poller.cursor.number < target:
            if task.done():
                task.result()
            await asyncio.sleep(0.002)
        seconds = time.perf_counter() - started
        stop.set()
        await task
        return Part(
            name,
            target - first,
            0,
            seconds,
            sent,
            reconciliation.batches,
            state.calls,
            reconciliation.seconds,
        )
    finally:
        await reader.close()
        await publisher.stop()
        await pool.close()


def report(part: Part, transfers: int) -> None:
    rate = part.blocks / part.seconds
    line = f"  {part.name}: {part.blocks} blocks in {part.seconds:.2f} s = {rate:,.0f} blocks/s"
    if transfers:
        rate = part.published / part.seconds
        line += f"; {part.published} deposits published = {rate:,.0f} matched transfers/s"
    print(line)
    per_batch = part.state_calls / max(part.batches, 1)
    print(
        f"    reconciliation: {part.reconciling * 1000:.0f} ms in {part.batches} batches"
        f" ({part.reconciling * 1000 / max(part.batches, 1):.2f} ms a batch,"
        f" {100 * part.reconciling / part.seconds:.1f} % of the part);"
        f" {part.state_calls} JSON-RPC calls = {per_batch:.1f} a batch"
    )


async def main(args: argparse.Namespace) -> None:
    configure_logging("warning")
    env = infra_env()
    prefix = f"bench{secrets.token_hex(3)}"
    topic = bench_topic(env, prefix, CHAIN)
    kafka = KafkaConfig(bootstrap_servers=env["INTENTD_KAFKA_BOOTSTRAP"], topic_prefix=prefix)
    # With open native-coin intents, balances are read at old blocks: keep their states.
    keep = ["--prune-history", "100000"] if args.native else ["--prune-history"]
    anvil = start_anvil(CHAIN_ID, extra_args=keep)
    try:
        async with DevChain(anvil.url) as chain, bench_database(env, args.watched) as url:
            if args.native:
                await open_native_intents(url, args.native)
            deployer = (await chain.accounts())[0]
            token = await chain.deploy_token(deployer, "Bench USD", "BUSD", 6)
            print(f"chain: anvil at {anvil.url}; building {args.sparse} sparse blocks ...")
            started = time.perf_counter()
            await build_sparse(chain, args.sparse)
            sparse_end = await chain.block_number()
            print(f"  built in {time.perf_counter() - started:.1f} s (head {sparse_end})")

            def config(batch_size: int) -> ChainConfig:
                return ChainConfig.model_validate(
                    {
                        "name": CHAIN, "chain_id": CHAIN_ID, "network": "test",
                        "rpc_urls": [anvil.url], "confirmations": 1, "batch_size": batch_size,
                        "start_block": 0, "max_log_range": 5000, "rpc_timeout": 30,
                        "tokens": [{"address": token, "symbol": "BUSD", "name": "Bench USD",
                                    "decimals": 6, "category": "stablecoin"}],
                    }
                )  # fmt: skip

            sparse = await run_part(
                "sparse", config=config(args.batch_size), url=url, kafka=kafka, topic=topic,
                target=sparse_end, max_calls=args.max_calls,
            )  # fmt: skip
            dense = []
            for label, per_tx in (("one tx per transfer", 1), ("disperse", args.per_tx)):
                print(
                    f"building {args.dense} dense blocks, {args.per_block} transfers each ({label})"
                )
                started = time.perf_counter()
                sent = await build_dense(
                    chain, token, args.dense, args.per_block, args.watched, per_tx=per_tx
                )
                end = await chain.block_number()
                print(f"  built in {time.perf_counter() - started:.1f} s (head {end})")
                part = await run_part(
                    f"dense, {label}", config=config(args.dense_batch_size), url=url, kafka=kafka,
                    topic=topic, target=end, max_calls=args.max_calls,
                )  # fmt: skip
                dense.append((part, sent))
    finally:
        anvil.stop()
    print(f"results ({args.watched:,} watched addresses):")
    report(sparse, 0)
    for part, sent in dense:
        report(part, sent)
        if part.published != sent:
            print(f"  WARNING: {sent} transfers sent, {part.published} deposits published")


async def open_native_intents(url: str, count: int) -> None:
    """Make the first ``count`` intents native-coin intents of the bench chain, open."""
    pool = await create_pool(url, max_size=1)
    try:
        await pool.execute(
            """
            UPDATE intents SET source_chain = $1, token_in = $2,
                   created_at = now() - interval '1 day', expires_at = now() + interval '30 days'
             WHERE id <= $3
            """,
            CHAIN,
            NATIVE_TOKEN,
            count,
        )
    finally:
        await pool.close()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench backfill", description=__doc__.splitlines()[0]
    )
    p.add_argument("--sparse", type=int, default=10_000, help="empty blocks (default %(default)s)")
    p.add_argument("--dense", type=int, default=400, help="dense blocks (default %(default)s)")
    p.add_argument("--per-block", type=int, default=50, help="transfers per dense block")
    p.add_argument("--per-tx", type=int, default=50, help="transfers per disperse transaction")
    p.add_argument("--watched", type=int, default=100_000, help="watched intent addresses")
    p.add_argument("--batch-size", type=int, default=1000, help="blocks per batch, sparse part")
    p.add_argument("--dense-batch-size", type=int, default=100, help="blocks per batch, dense part")
    p.add_argument("--max-calls", type=int, default=50, help="JSON-RPC calls per HTTP POST")
    p.add_argument(
        "--native", type=int, default=0, help="open native-coin intents among the watched"
    )
    return p


def run(argv: list[str]) -> None:
    asyncio.run(main(parser().parse_args(argv)))
