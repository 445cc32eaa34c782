"""Memory of an ``intentd poll`` process watching a million intent addresses.

``python -m bench poller-memory`` (needs ``make infra-up``; starts its own anvil). It fills
a scratch database with ``--watched`` intents, runs ``intentd --config <tmp> poll`` as
a user would, lets it load the watched set, catch up and publish a few deposits, and
samples its resident memory (``VmRSS``; ``VmHWM`` is the peak) from ``/proc``. A second
run with no intents gives the baseline, so the cost per watched address is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg

from bench.poller_env import ROOT, bench_database, bench_topic, infra_env, watched_address
from intentd_dev.devchain import MINT, DevChain, call_data
from intentd_dev.devinfra.anvil import start_anvil

CHAIN = "BENCHMEM"
CHAIN_ID = 31_998


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in {"VmRSS", "VmHWM"}:
            fields[key] = int(value.split()[0])
    return fields["VmRSS"], fields["VmHWM"]


def config_toml(url: str, bootstrap: str, prefix: str, rpc: str, token: str) -> str:
    return f"""
environment = "test"
[database]
url = "{url}"
[kafka]
bootstrap_servers = "{bootstrap}"
topic_prefix = "{prefix}"
[observability]
log_level = "warning"
[chains.{CHAIN}]
chain_id = {CHAIN_ID}
network = "test"
rpc_urls = ["{rpc}"]
confirmations = 1
poll_interval = 0.2
batch_size = 200
start_block = 0
[[chains.{CHAIN}.tokens]]
address = "{token}"
symbol = "BUSD"
name = "Bench USD"
decimals = 6
category = "stablecoin"
"""


async def cursor(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow("SELECT block_number FROM chain_cursors WHERE chain = $1", CHAIN)
        return -1 if row is None else int(row[0])
    finally:
        await conn.close()


async def measure(env: dict[str, str], watched: int, settle: float) -> tuple[int, int, float]:
    """(RSS KiB once caught up and idle, peak RSS KiB, seconds to catch up) of one run."""
    prefix = f"bench{secrets.token_hex(3)}"
    bench_topic(env, prefix, CHAIN)
    anvil = start_anvil(CHAIN_ID)
    try:
        async with DevChain(anvil.url) as chain, bench_database(env, watched) as url:
            deployer, payer = (await chain.accounts())[:2]
            token = await chain.deploy_token(deployer, "Bench USD", "BUSD", 6)
            await chain.mine(500)
            for n in range(1, min(watched, 20) + 1):
                await chain.send(payer, token, data=call_data(MINT, watched_address(n), n))
            head = await chain.block_number()
            with tempfile.TemporaryDirectory() as tmp:
                config = Path(tmp) / "bench.toml"
                config.write_text(
                    config_toml(url, env["INTENTD_KAFKA_BOOTSTRAP"], prefix, anvil.url, token)
                )
                started = time.monotonic()
                process = subprocess.Popen(
                    [sys.executable, "-m", "intentd", "--config", str(config), "poll",
                     "--chain", CHAIN],
                    cwd=ROOT, env={**os.environ, "INTENTD_CONFIG": str(config)},
                )  # fmt: skip
                try:
                    while await cursor(url) < head:
                        if process.poll() is not None:
                            raise SystemExit(f"intentd poll exited with {process.returncode}")
                        await asyncio.sleep(0.1)
                    caught_up = time.monotonic() - started
                    await asyncio.sleep(settle)  # idle: refreshing the set every 250 ms
                    rss, peak = rss_kib(process.pid)
                finally:
                    process.send_signal(signal.SIGTERM)
                    code = process.wait(30)
                if code != 0:
                    raise SystemExit(f"intentd poll exited with {code} after SIGTERM")
                return rss, peak, caught_up
    finally:
        anvil.stop()


async def main(args: argparse.Namespace) -> None:
    env = infra_env()
    base_rss, base_peak, _ = await measure(env, 0, args.settle)
    print(f"intentd poll with no watched address: RSS {base_rss / 1024:.0f} MiB "
          f"(peak {base_peak / 1024:.0f} MiB)")  # fmt: skip
    rss, peak, seconds = await measure(env, args.watched, args.settle)
    per_address = (rss - base_rss) * 1024 / args.watched
    print(f"intentd poll with {args.watched:,} watched addresses: RSS {rss / 1024:.0f} MiB "
          f"(peak {peak / 1024:.0f} MiB), {per_address:.0f} bytes per address; "
          f"started and caught up in {seconds:.1f} s")  # fmt: skip


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench poller-memory", description=__doc__.splitlines()[0]
    )
    p.add_argument("--watched", type=int, default=1_000_000, help="watched intent addresses")
    p.add_argument("--settle", type=float, default=3.0, help="idle seconds before sampling")
    return p


def run(argv: list[str]) -> None:
    asyncio.run(main(parser().parse_args(argv)))
