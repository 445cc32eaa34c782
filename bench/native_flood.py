"""A poller following 1 s blocks while many native-coin intents are open (issue 18, item 3).

``python -m bench native-flood`` (needs ``make infra-up`` for PostgreSQL; it starts its
own anvil mining a block every second). A scratch database holds ``--open`` PENDING
native-coin intents of the bench chain (created 10 minutes ago, expiring in an hour)
and ``--ended`` that expired 12 minutes ago (EXPIRED 10 minutes ago, so still inside
the hour after their expiry that the reconciliation once covered). The real poller
role (``composition.roles.poller_role``: its RPC clients, the watched set, the balance
reconciliation, the cursor store) follows the chain for ``--seconds``; every
``--pay-every`` seconds one open intent is paid, alternately by a top-level transfer
and through a forwarding contract (found only by the reconciliation). Printed, after
``--warmup`` seconds: per poll batch the JSON-RPC calls and HTTP POSTs (all, and those
of ``eth_getBalance``), the time a batch takes (read to cursor commit), the blocks the
cursor is behind the chain's head (sampled every 0.25 s), and how long after its
block each payment was published. ``--rpc-latency`` adds that many milliseconds to
every POST (a provider across a network, not on the same machine).

It counts at the HTTP transport and sets only the settings the code knows, so the
same command measures older code: ``PYTHONPATH=<old checkout>/src:. python -m bench
native-flood``. ``--batch-limit`` sets ``chains.<NAME>.rpc_batch_limit`` where the
code has it. Figures are printed, nothing asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bench.poller_env import RELAYER, bench_database, bench_settings, infra_env, on_every_post
from intentd.adapters.postgres import Pool, create_pool
from intentd.composition.roles import poller_role
from intentd.indexer.poller import Poller
from intentd.messages import OutgoingMessage
from intentd.observability import configure_logging
from intentd.settings import NATIVE_TOKEN, ChainConfig, Settings
from intentd_dev.devchain import DevChain
from intentd_dev.devinfra.anvil import start_anvil
from intentd_dev.devinfra.contracts import forwarder_artifact

CHAIN, CHAIN_ID = "FLOOD", 31_996
DESTINATION = "FLOOD_DEST"  # only its settings are read
FORWARD = "0x101e8952"  # forward(address)


@dataclass
class Counted:
    """JSON-RPC calls and POSTs of every client of this process, by method."""

    latency: float = 0.0
    calls: Counter[str] = field(default_factory=Counter)
    posts: Counter[str] = field(default_factory=Counter)
    """POSTs by the methods they carry (a POST with two methods counts for each)."""

    def install(self) -> None:
        on_every_post(self.seen)

    async def seen(self, calls: list[dict[str, Any]]) -> None:
        methods = Counter(call["method"] for call in calls)
        self.calls.update(methods)
        self.posts.update(methods.keys())
        self.posts["*"] += 1
        if self.latency:
            await asyncio.sleep(self.latency)


@dataclass
class Batches:
    """Time of each poll batch (``Poller._apply``: match, reconcile, publish, commit)."""

    seconds: list[float] = field(default_factory=list)
    counting: bool = False

    def install(self) -> None:
        apply = Poller._apply

        async def timed(self_: Poller, blocks: Any, raw: Any) -> bool:
            started = time.perf_counter()
            try:
                return await apply(self_, blocks, raw)
            finally:
                if self.counting:
                    self.seconds.append(time.perf_counter() - started)

        Poller._apply = timed  # type: ignore[method-assign,assignment]


class Published:
    """A publisher that keeps when each deposit to an address was published."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.changed = asyncio.Event()

    async def publish_all(self, messages: Iterable[OutgoingMessage]) -> int:
        batch = list(messages)
        for message in batch:
            self.at.setdefault(message.key, time.time())
        self.changed.set()
        return len(batch)


def settings_for(env: dict[str, str], url: str, rpc: str, batch_limit: int | None) -> Settings:
    chain: dict[str, Any] = {
        "network": "test", "rpc_urls": [rpc], "confirmations": 1, "poll_interval": 0.25,
        "relayer": RELAYER, "start_block": "latest",
    }  # fmt: skip
    if batch_limit is not None and "rpc_batch_limit" in ChainConfig.model_fields:
        chain["rpc_batch_limit"] = batch_limit
    return bench_settings(env, url, chain, (CHAIN, DESTINATION), CHAIN_ID)


async def make_native(pool: Pool, opened: int, ended: int) -> list[str]:
    """Intents 1..opened open, the next ``ended`` expired; the open ones' addresses."""
    native = "source_chain = $1, token_in = $2"
    await pool.execute(
        f"UPDATE intents SET {native}, created_at = now() - interval '10 minutes',"
        " expires_at = now() + interval '1 hour' WHERE id <= $3",
        CHAIN,
        NATIVE_TOKEN,
        opened,
    )
    await pool.execute(
        f"UPDATE intents SET {native}, status = 'EXPIRED',"
        " created_at = now() - interval '40 minutes', expires_at = now() - interval '12 minutes',"
        " terminal_at = now() - interval '10 minutes' WHERE id > $3",
        CHAIN,
        NATIVE_TOKEN,
        opened,
    )
    rows = await pool.fetch("SELECT intent_address FROM intents WHERE id <= $1 ORDER BY id", opened)
    return [r["intent_address"] for r in rows]


def spread(values: list[float], unit: str, scale: float = 1.0, digits: int = 0) -> str:
    if not values:
        return "none"
    ordered = sorted(values)

    def at(q: float) -> str:
        return f"{ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * scale:.{digits}f}"

    mean = sum(values) / len(values) * scale
    return (
        f"p50 {at(0.5)} {unit}, p90 {at(0.9)} {unit}, max {at(1.0)} {unit},"
        f" mean {mean:.{digits}f} {unit} ({len(values)} samples)"
    )


async def main_async(args: argparse.Namespace) -> None:
    configure_logging("warning")
    env = infra_env()
    counted = Counted(latency=args.rpc_latency / 1000)
    counted.install()
    batches = Batches()
    batches.install()
    anvil = await asyncio.to_thread(
        start_anvil, CHAIN_ID, block_time=1, extra_args=["--prune-history", "5000"]
    )
    try:
        async with DevChain(anvil.url) as rpc, bench_database(env, args.open + args.ended) as url:
            payer = (await rpc.accounts())[1]
            deployed = await rpc.receipt(
                await rpc.send(payer, None, data=forwarder_artifact().bytecode)
            )
            forwarder = str(deployed["contractAddress"])
            settings = settings_for(env, url, anvil.url, args.batch_limit)
            chain = settings.chains[CHAIN].model_dump()
            known = [f"{k} = {chain[k]}" for k in ("rpc_batch_limit",) if k in chain]
            pool = await create_pool(url, max_size=4)
            try:
                payees = await make_native(pool, args.open, args.ended)
                await pool.execute("ANALYZE intents")
                published = Published()
                stop = asyncio.Event()
                role = poller_role(settings, CHAIN, pool=pool, publisher=published)
                task = asyncio.create_task(role(stop))
                print(
                    f"anvil at {anvil.url}, 1 s blocks; {args.open:,} open and {args.ended:,}"
                    f" ended native-coin intents; RPC latency {args.rpc_latency} ms a POST;"
                    f" {', '.join(known) or 'no rpc_batch_limit (older code)'}"
                )
                behind: list[int] = []
                paid: list[tuple[str, str, int]] = []  # (address, how, block time)
                began = time.monotonic()
                measuring = False
                next_payment = began + args.warmup
                while time.monotonic() - began < args.warmup + args.seconds:
                    if task.done():
                        task.result()
                        raise SystemExit("the poller stopped")
                    now = time.monotonic()
                    if not measuring and now - began >= args.warmup:
                        measuring = batches.counting = True
                        counted.calls.clear()
                        counted.posts.clear()
                    if measuring:
                        cursor = await pool.fetchval(
                            "SELECT block_number FROM chain_cursors WHERE chain = $1", CHAIN
                        )
                        if cursor is not None:
                            behind.append(await rpc.block_number() - cursor)
                    if now >= next_payment and len(paid) < len(payees):
                        paid.append(await pay(rpc, payer, forwarder, payees[len(paid)], len(paid)))
                        next_payment = now + args.pay_every
                    await asyncio.sleep(0.25)
                batches.counting = False
                calls = dict(counted.calls)
                posts = dict(counted.posts)
                await wait_published(published, paid, deadline=time.monotonic() + 30)
                stop.set()
                await asyncio.wait_for(task, 60)
            finally:
                await pool.close()
    finally:
        await asyncio.to_thread(anvil.stop)
    report(args, Figures(batches.seconds, calls, posts, behind, paid, published))


async def pay(rpc: DevChain, payer: str, forwarder: str, to: str, n: int) -> tuple[str, str, int]:
    """Pay ``to`` 1 gwei: directly (even ``n``) or through the forwarder (odd)."""
    if n % 2 == 0:
        tx_hash, how = await rpc.send(payer, to, value=10**9), "direct"
    else:
        data = FORWARD + to[2:].lower().rjust(64, "0")
        tx_hash, how = await rpc.send(payer, forwarder, value=10**9, data=data), "contract"
    receipt = await rpc.receipt(tx_hash)
    block = await rpc.rpc("eth_getBlockByNumber", receipt["blockNumber"], False)
    return to, how, int(block["timestamp"], 16)


async def wait_published(
    published: Published, paid: list[tuple[str, str, int]], *, deadline: float
) -> None:
    """Until every payment was published, or ``deadline``."""
    while any(to not in published.at for to, _, _ in paid):
        published.changed.clear()
        left = deadline - time.monotonic()
        if left <= 0:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(published.changed.wait(), left)


@dataclass
class Figures:
    seconds: list[float]
    calls: dict[str, int]
    posts: dict[str, int]
    behind: list[int]
    paid: list[tuple[str, str, int]]
    published: Published


def report(args: argparse.Namespace, figures: Figures) -> None:
    seconds, calls, posts = figures.seconds, figures.calls, figures.posts
    behind, paid, published = figures.behind, figures.paid, figures.published
    count = max(len(seconds), 1)
    balance_calls = calls.get("eth_getBalance", 0)
    print(f"results over {args.seconds} s after a {args.warmup} s warm-up, {len(seconds)} batches:")
    print(
        f"  per poll batch: {sum(calls.values()) / count:,.1f} JSON-RPC calls in"
        f" {posts.get('*', 0) / count:,.1f} POSTs; eth_getBalance {balance_calls / count:,.1f}"
        f" calls in {posts.get('eth_getBalance', 0) / count:,.1f} POSTs"
    )
    print(f"  calls by method: {dict(sorted(calls.items()))}")
    print(f"  time per poll batch: {spread(seconds, 'ms', 1000)}")
    print(f"  blocks behind the head: {spread([float(b) for b in behind], 'blocks')}")
    for how in ("direct", "contract"):
        ours = [(to, at) for to, kind, at in paid if kind == how]
        delays = [published.at[to] - at for to, at in ours if to in published.at]
        lost = sum(1 for to, _ in ours if to not in published.at)
        print(
            f"  {how} payments, block time to published: {spread(delays, 's', digits=1)}"
            f"{f'; {lost} NOT PUBLISHED' if lost else ''}"
        )


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench native-flood")
    parser.add_argument("--open", type=int, default=10_000, help="open native-coin intents")
    parser.add_argument("--ended", type=int, default=10_000, help="native-coin intents ended")
    parser.add_argument("--seconds", type=int, default=60, help="measured seconds")
    parser.add_argument("--warmup", type=int, default=15, help="seconds before measuring")
    parser.add_argument("--pay-every", type=float, default=5.0, help="seconds between payments")
    parser.add_argument("--rpc-latency", type=float, default=0.0, help="ms added to each POST")
    parser.add_argument(
        "--batch-limit", type=int, default=None, help="chains.<NAME>.rpc_batch_limit, if known"
    )
    asyncio.run(main_async(parser.parse_args(argv)))
