"""What proving log answers whole costs the poller's reads (``chain.evm.coverage``).

``python -m bench log-proof`` starts its own anvil, builds ``--sparse`` empty blocks and
``--dense`` blocks of ``--per-block`` token transfers (disperse transactions), then
reads and decodes every batch of each part two ways, alternately, ``--rounds`` times:

- *unproven*: the reads as they were before the proof: the full blocks and one
  ``eth_getLogs`` per range in separate POSTs, decoded without the proof;
- *proven*: ``EvmChainReader.read_range`` (each log POST between two
  ``eth_getBlockByNumber(anchor)``) and the proof (``chain.evm.coverage.proven_logs``)
  before the same decoding.

It prints the best and median seconds of each, blocks/s and the overhead. No
PostgreSQL, no Kafka: only the reads and the decoding the proof adds to. Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from bench.backfill import build_dense, build_sparse
from bench.poller_env import watched_address
from intentd.adapters.evm.chain_reader import EvmChainReader
from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.chain.blocks import BlockRange
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.coverage import proven_logs
from intentd.chain.evm.decoding import TRANSFER_TOPIC, decode_headers, find_deposits
from intentd_dev.devchain import DevChain
from intentd_dev.devinfra.anvil import start_anvil

CHAIN_ID = 31_998
WATCHED = 1_000


async def unproven(
    client: JsonRpcClient, token: str, blocks: BlockRange, watched: WatchedAddresses
) -> int:
    calls = [("eth_getBlockByNumber", [hex(n), True]) for n in blocks]
    query = {
        "fromBlock": hex(blocks.first), "toBlock": hex(blocks.last),
        "address": [token], "topics": [TRANSFER_TOPIC],
    }  # fmt: skip
    full, logs = await asyncio.gather(client.batch(calls), client.call("eth_getLogs", [query]))
    return len(find_deposits(full, logs, blocks, [token], watched).deposits)


async def proven(
    reader: EvmChainReader, token: str, blocks: BlockRange, watched: WatchedAddresses
) -> int:
    raw = await reader.read_range(blocks)
    headers = decode_headers(raw.blocks, blocks)
    logs = proven_logs(raw.answers, {h.number: h.hash for h in headers}, covering=blocks)
    found = find_deposits(raw.blocks, logs, blocks, [token], watched, headers=headers)
    return len(found.deposits)


async def timed(
    part: BlockRange, batch: int, read: Callable[[BlockRange], Awaitable[int]]
) -> tuple[float, int]:
    started = time.perf_counter()
    found = 0
    for blocks in part.chunks(batch):
        found += await read(blocks)
    return time.perf_counter() - started, found


async def main(args: argparse.Namespace) -> None:
    anvil = start_anvil(CHAIN_ID, extra_args=["--prune-history"])
    try:
        async with DevChain(anvil.url) as chain:
            deployer = (await chain.accounts())[0]
            token = await chain.deploy_token(deployer, "Bench USD", "BUSD", 6)
            start = await chain.block_number() + 1
            await build_sparse(chain, args.sparse)
            sparse = BlockRange(start, await chain.block_number())
            await build_dense(
                chain, token, args.dense, args.per_block, WATCHED, per_tx=args.per_block
            )
            dense = BlockRange(sparse.last + 1, await chain.block_number())
            watched = WatchedAddresses([watched_address(n) for n in range(1, WATCHED + 1)])
            client = JsonRpcClient("BENCH", [anvil.url], timeout=30)
            reader = EvmChainReader(client, [token], max_log_range=5000)
            print(f"anvil at {anvil.url}; {args.rounds} rounds, alternating")
            for name, part, batch in (
                ("sparse", sparse, args.batch_size),
                ("dense", dense, args.dense_batch_size),
            ):
                times: dict[str, list[float]] = {"unproven": [], "proven": []}
                counts: dict[str, int] = {}
                for _ in range(args.rounds):
                    for label, read in (
                        ("unproven", lambda b: unproven(client, token, b, watched)),
                        ("proven", lambda b: proven(reader, token, b, watched)),
                    ):
                        seconds, counts[label] = await timed(part, batch, read)
                        times[label].append(seconds)
                assert counts["unproven"] == counts["proven"], counts
                best = {k: min(v) for k, v in times.items()}
                median = {k: statistics.median(v) for k, v in times.items()}
                print(
                    f"  {name}: {len(part)} blocks in batches of {batch},"
                    f" {counts['proven']} deposits"
                )
                for label in ("unproven", "proven"):
                    print(
                        f"    {label:9} best {best[label]:.3f} s ({len(part) / best[label]:,.0f}"
                        f" blocks/s), median {median[label]:.3f} s"
                    )
                overhead = (median["proven"] / median["unproven"] - 1) * 100
                print(f"    proof overhead (medians): {overhead:+.1f} %")
            await client.close()
    finally:
        anvil.stop()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench log-proof", description=__doc__)
    p.add_argument("--sparse", type=int, default=5_000, help="empty blocks (default %(default)s)")
    p.add_argument("--dense", type=int, default=100, help="dense blocks (default %(default)s)")
    p.add_argument("--per-block", type=int, default=50, help="transfers per dense block")
    p.add_argument("--batch-size", type=int, default=1000, help="blocks per batch, sparse part")
    p.add_argument("--dense-batch-size", type=int, default=100, help="blocks per batch, dense")
    p.add_argument("--rounds", type=int, default=5, help="runs of each way (default %(default)s)")
    return p


def run(argv: list[str]) -> None:
    asyncio.run(main(parser().parse_args(argv)))
