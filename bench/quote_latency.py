"""Quote latency with live price feeds against static prices (the cache is read, never the RPC).

``python -m bench quote-latency [--concurrency 16] [--seconds 10] [--rounds 3]
[--iterations 20000]`` (also ``python -m bench.quote_latency``).

Two measurements of one quote: ETH to ETH on one chain, 30 USD converted at ETH's
price, with a fixed USD route fee (so the price is used twice).

1. In process: ``intents.quotes.quote`` with ``StaticPrices`` (the ``[prices]`` table)
   and with ``FeedPrices`` holding fresh readings of two feeds on two chains, each
   gated by a sequencer uptime feed (every read judges the rounds, the views, the
   sequencers and the agreement). Median and p99 per quote, microseconds.
2. Over HTTP: ``intentd api`` (one worker, a subprocess as deployed) started once with
   the static table and once with the feeds (the dev stack's mock aggregators on an
   anvil of its own, refreshed every second in the background), driven by ``wrk`` with
   ``GET /api/v1/quotes/single-source`` (closed loop, ``concurrency`` connections, one
   thread). ``rounds`` alternate the two, so drift of the machine hits both alike.
   Besides the rates and latencies, the API's CPU time per request: on a machine others
   load too, the figure least moved by them.

Needs ``make infra-up`` (PostgreSQL for the API key; Kafka is named, not used), node
(the mock is compiled with solc-js) and wrk (installed with apt-get when root, as in
``bench/api_throughput.py``). Prints JSON. Goal (issue 20): live within 10 % of static.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench.api_throughput import (
    _DONE,
    Target,
    _lua_string,
    drop,
    free_port,
    phase,
    prepare,
    wait_ready,
    wrk_path,
)
from intentd.intents import quotes, routing
from intentd.pricing import PriceSource, StaticPrices
from intentd.pricing.cache import FeedPrices
from intentd.pricing.rounds import ChainReading, ChainView, FeedReading, Round
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devinfra import feeds
from intentd_dev.devinfra.anvil import start_anvil
from intentd_dev.devinfra.contracts import aggregator_artifact, connect
from intentd_dev.devinfra.envfile import load_infra_env

ROOT = Path(__file__).resolve().parent.parent
CHAIN, OTHER = "BENCH_TESTNET", "BENCH_TWO_TESTNET"
CHAIN_ID, OTHER_ID = 777_031, 777_032
ETH_FEED = str(feeds.feed_address("ETH"))
OTHER_FEED = "0x" + "ee" * 20
RELAYER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
FEED = {"heartbeat": 1320, "min": "100", "max": "100000"}
FIGURES = ("per_second", "p50_ms", "p99_ms", "api_cpu_ms_per_request")


def chain_section(url: str, chain_id: int, *, fed: str | None) -> dict[str, Any]:
    section: dict[str, Any] = {
        "chain_id": chain_id,
        "network": "test",
        "l1_fee": "none",
        "rpc_urls": [url],
        "relayer": RELAYER,
    }
    if fed is not None:
        section["native"] = {"price_feed": {"address": fed, **FEED}}
        section["sequencer_uptime_feed"] = str(feeds.SEQUENCER_FEED)
    return section


def sections(url: str, *, live: bool) -> dict[str, Any]:
    return {
        "environment": "test",
        "kafka": {"bootstrap_servers": "127.0.0.1:9"},
        "fees": {"bridges": [{"name": "relay", "fixed_usd": "0.10", "bps": "5"}]},
        "prices": {} if live else {"ETH": "3000"},
        "pricing": {"refresh_interval": 1.0, "max_read_age": 10.0},
        "chains": {CHAIN: chain_section(url, CHAIN_ID, fed=ETH_FEED if live else None)},
    }


def in_process(iterations: int) -> dict[str, Any]:
    """Microseconds per ``quotes.quote`` call, static table against two live feeds."""
    base: dict[str, Any] = {
        "database": {"url": "postgresql://x/y"},
        **sections("http://a", live=True),
    }
    base["chains"][OTHER] = chain_section("http://b", OTHER_ID, fed=OTHER_FEED)
    live = Settings.model_validate(base)
    static = Settings.model_validate(
        {"database": {"url": "postgresql://x/y"}, **sections("http://a", live=False)}
    )
    fed = FeedPrices(live)
    now = time.time()
    for name, address in ((CHAIN, ETH_FEED), (OTHER, OTHER_FEED)):
        price = FeedReading(Round(7, 3000 * 10**8, int(now), int(now), 7), 8)
        up = FeedReading(Round(1, 0, 1, int(now), 1), None)
        fed.record(name, ChainReading(ChainView(1, int(now), now), {address.lower(): price}, up))

    def per_quote(settings: Settings, source: PriceSource) -> dict[str, float]:
        path = routing.route(settings, CHAIN, NATIVE_TOKEN, CHAIN, None)
        samples = []
        for _ in range(iterations):
            started = time.perf_counter_ns()
            quotes.quote(settings, source, path, "30", "USD")
            samples.append((time.perf_counter_ns() - started) / 1000)
        samples.sort()
        return {
            "median_us": round(statistics.median(samples), 1),
            "p99_us": round(samples[int(0.99 * len(samples))], 1),
        }

    per_quote(static, StaticPrices(static.prices))  # warm-up
    figures = {
        "static": per_quote(static, StaticPrices(static.prices)),
        "live_two_feeds": per_quote(live, fed),
    }
    figures["live_over_static_median"] = round(
        figures["live_two_feeds"]["median_us"] / figures["static"]["median_us"], 3
    )
    return figures


def toml(data: dict[str, Any]) -> str:
    """Just enough TOML for :func:`sections` (tables of scalars, lists, inline tables)."""

    def value(item: Any) -> str:
        if isinstance(item, dict):
            return "{ " + ", ".join(f"{k} = {value(v)}" for k, v in item.items()) + " }"
        if isinstance(item, list):
            return "[" + ", ".join(value(v) for v in item) + "]"
        if isinstance(item, bool):
            return "true" if item else "false"
        if isinstance(item, int | float):
            return str(item)
        return json.dumps(str(item))

    lines: list[str] = []
    for key, item in data.items():
        if not isinstance(item, dict):
            lines.append(f"{key} = {value(item)}")
    for key, item in data.items():
        if isinstance(item, dict) and key != "chains":
            lines.append(f"[{key}]")
            lines += [f"{k} = {value(v)}" for k, v in item.items()]
    for name, chain in data.get("chains", {}).items():
        lines.append(f"[chains.{name}]")
        lines += [f"{k} = {value(v)}" for k, v in chain.items()]
    return "\n".join(lines) + "\n"


def http_round(
    config: Path, env: dict[str, str], key: str, args: argparse.Namespace, wrk: str
) -> dict[str, Any]:
    port, metrics_port = free_port(), free_port()
    env = {
        **env,
        "INTENTD__OBSERVABILITY__METRICS_PORT": str(metrics_port),
        "INTENTD__OBSERVABILITY__LOG_LEVEL": "warning",
    }
    command = [sys.executable, "-m", "intentd", "--config", str(config), "api"]
    command += ["--port", str(port), "--workers", "1"]
    server = subprocess.Popen(command, env=env, cwd=ROOT)
    try:
        wait_ready(metrics_port, server)
        query = (
            f"/api/v1/quotes/single-source?sourceChain={CHAIN}&tokenIn={NATIVE_TOKEN}"
            f"&destinationChain={CHAIN}&amount=30"
        )
        script = f'wrk.headers["Authorization"] = {_lua_string("Bearer " + key)}\n' + _DONE
        target = Target(wrk, port, server.pid, args.concurrency)
        phase(target, query, script, 2)  # warm-up
        found = phase(target, query, script, args.seconds)
        # CPU of the API per quote: what the request costs, little moved by the load
        # others put on the machine (the rates and latencies are)
        cpu = found["cpu"]["api_percent_of_one_cpu"] / 100
        found["api_cpu_ms_per_request"] = round(1000 * cpu / found["per_second"], 3)
        return found
    finally:
        server.terminate()
        server.wait(timeout=30)


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20_000)
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"in_process": in_process(args.iterations)}

    wrk = wrk_path()
    infra = load_infra_env()
    prepared = asyncio.run(prepare(infra["INTENTD_DATABASE_URL"]))
    url, _, key = prepared.partition("#")
    anvil = start_anvil(CHAIN_ID, block_time=1)
    try:
        with connect(anvil.url) as w3:
            feeds.ensure_feeds(w3, aggregator_artifact())
            feeds.set_price(w3, feeds.feed_address("ETH"), Decimal(3000))
        env = {
            **os.environ,
            "INTENTD__DATABASE__URL": url,
            "INTENTD_HD_MNEMONIC_FILE": infra["INTENTD_HD_MNEMONIC_FILE"],
        }
        runs: dict[str, list[dict[str, Any]]] = {"static": [], "live": []}
        with tempfile.TemporaryDirectory() as directory:
            for kind in ("static", "live"):
                data = {"database": {"url": url}, **sections(anvil.url, live=kind == "live")}
                (Path(directory) / f"{kind}.toml").write_text(toml(data))
            for _ in range(args.rounds):
                for kind in ("static", "live"):
                    config = Path(directory) / f"{kind}.toml"
                    runs[kind].append(http_round(config, env, key, args, wrk))
        report["http"] = {
            "concurrency": args.concurrency,
            "seconds": args.seconds,
            "api_workers": 1,
            "cpus": os.cpu_count(),
            "runs": runs,
            "median_of_runs": {
                kind: {figure: statistics.median(r[figure] for r in found) for figure in FIGURES}
                for kind, found in runs.items()
            },
        }
        medians = report["http"]["median_of_runs"]
        report["http"]["live_over_static"] = {
            figure: round(medians["live"][figure] / medians["static"][figure], 3)
            for figure in FIGURES
        }
        report["goal"] = "live within 10 % of static (p50, p99, requests per second, CPU)"
        print(json.dumps(report, indent=2))
        if any(r["failures"] for found in runs.values() for r in found):
            raise SystemExit("some requests failed")
    finally:
        anvil.stop()
        asyncio.run(drop(url))


if __name__ == "__main__":
    run(sys.argv[1:])
