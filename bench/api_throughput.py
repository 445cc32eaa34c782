"""API throughput: create-intent and get-intent requests per second, p50 and p99 latency.

``python -m bench api-throughput [--concurrency 32] [--seconds 10] [--api-workers 2]
[--db-pool 8]`` (also ``python -m bench.api_throughput``).

Needs ``make infra-up`` (PostgreSQL; the chains are not read) and ``wrk``, the HTTP
load generator (a C program; Debian/Ubuntu package ``wrk``): when it is missing and
this runs as root on a system with apt-get, it is installed with ``apt-get install
wrk``; otherwise the run stops and says how to install it.

The run creates a database of its own, migrates it, creates an API key, starts
``intentd api`` on a free loopback port (a subprocess, as deployed) and drives it
with one wrk thread holding ``concurrency`` keep-alive connections, each sending its
next request as soon as the previous answer arrived (closed loop), for ``seconds``
per phase. Phase 1 creates intents (``POST /api/v1/intents``, one body, no
``Idempotency-Key``: every request creates an intent); phase 2 reads them back
(``GET /api/v1/intents/{id}``, cycling through the created ids). Any 4xx/5xx answer
or socket error fails the run (wrk cuts the requests in flight when a phase ends:
the API logs those creates as ``ClientDisconnect``, which is not a failure). Besides
the rates and latencies it prints how busy the machine's CPUs were and how much of
that was ``intentd api``: on a 2-CPU machine the API, PostgreSQL and wrk share the
same two cores.

Goals (issue 4): at least 1,000 creates/s and 5,000 gets/s, p99 under 50 ms.

Besides wrk's figures it prints the API's own (scraped from its metrics port): the
bucket bound its in-app create p99 is under, its group commits and how many took
over 50 ms; and, when this process may write in PostgreSQL's data directory, how
long that disk takes to flush an 8 KiB write while idle (``disk_flush_idle``). A
create p99 far above the in-app one, with slow commits counted, is the disk's.

Where the time goes: ``py-spy record -p <pid of intentd api> -f raw -o out.txt``
during a phase (``pip install py-spy``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
from prometheus_client.parser import text_string_to_metric_families

from intentd.adapters.postgres import api_keys, clients, create_pool, migrate
from intentd.credentials import generate_key
from intentd.settings import load_settings
from intentd.settings.sections import IntentsConfig
from intentd_dev.devinfra.anvil import free_port

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "config" / "local.toml"
PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
MAX_GET_IDS = 20_000

# wrk's done() hook: one JSON line with the figures (latencies in microseconds).
_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, '
    .. '"error_answers": %d, "socket_errors": %d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write + e.timeout))
end
"""


def wrk_path() -> str:
    """The wrk executable; installed with apt-get when missing and possible."""
    found = shutil.which("wrk")
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        print("wrk is missing; installing it: apt-get install -y wrk", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-q"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True)
        found = shutil.which("wrk")
    if found is None:
        raise SystemExit(
            "this benchmark needs wrk (https://github.com/wg/wrk), the HTTP load generator:"
            " apt-get install wrk (Debian, Ubuntu), dnf install wrk, brew install wrk"
        )
    return found


def _lua_string(text: str) -> str:
    assert "]==]" not in text
    return f"[==[{text}]==]"


def create_script(key: str, body: str) -> str:
    return (
        'wrk.method = "POST"\n'
        f"wrk.body = {_lua_string(body)}\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = {_lua_string("Bearer " + key)}\n' + _DONE
    )


def get_script(key: str, ids: list[int]) -> str:
    return (
        f'wrk.headers["Authorization"] = {_lua_string("Bearer " + key)}\n'
        f"local ids = {{{','.join(map(str, ids))}}}\n"
        "local i = 0\n"
        "request = function()\n"
        "  i = i + 1\n"
        '  return wrk.format("GET", "/api/v1/intents/" .. ids[i % #ids + 1])\n'
        "end\n" + _DONE
    )


@dataclass(frozen=True, slots=True)
class CpuSample:
    busy: float
    """Seconds of CPU time used by the whole machine (all CPUs)."""
    api: float
    """Seconds of CPU time used by the ``intentd api`` processes."""


def _machine_busy() -> float:
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _process_cpu(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return 0.0
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _api_pids(pid: int) -> list[int]:
    """The parent and its worker processes (``--workers N`` starts N children)."""
    found = [pid]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rpartition(")")[2].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError):
            continue
    return found


def cpu_sample(pid: int) -> CpuSample:
    return CpuSample(_machine_busy(), sum(_process_cpu(p) for p in _api_pids(pid)))


@dataclass(frozen=True, slots=True)
class Target:
    wrk: str
    port: int
    server_pid: int
    concurrency: int


def scrape(port: int) -> dict[str, float]:
    """The API's Prometheus samples (summed over its workers by the parent), by name
    and labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return {
        sample.name + json.dumps(sample.labels, sort_keys=True): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def write_figures(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """What the API saw between two scrapes: the bucket bound its own create p99 is
    under (``intentd_api_request_seconds``: from the request's arrival in the app to
    its answer, so without the time in the kernel's queues and in wrk), and its group
    commits: how many, how big, how many took longer than 50 ms."""

    def delta(name: str, **labels: str) -> float:
        key = name + json.dumps(labels, sort_keys=True)
        return after.get(key, 0.0) - before.get(key, 0.0)

    writes = delta("intentd_intent_write_seconds_count")
    within = delta("intentd_intent_write_seconds_bucket", le="0.05")
    route = {"method": "POST", "route": "/api/v1/intents"}
    answered = delta("intentd_api_request_seconds_count", **route)
    bound = next(
        (
            float(le)
            for le in ("0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5")
            if delta("intentd_api_request_seconds_bucket", le=le, **route) >= 0.99 * answered
        ),
        None,
    )
    return {
        "in_app_p99_at_most_ms": bound * 1000 if bound is not None and answered else None,
        "group_commits": round(writes),
        "intents_per_commit": round(delta("intentd_intent_write_batch_size_sum") / writes, 1)
        if writes
        else None,
        "commits_over_50ms": round(writes - within),
    }


def disk_flush_figures(directory: str, seconds: float = 5.0) -> dict[str, Any] | None:
    """fdatasync of an 8 KiB write in ``directory`` (PostgreSQL's data directory, when
    this process may write there), repeated for ``seconds``: how long the disk takes
    to make a commit durable, with no load from us."""
    path = Path(directory) / f"intentd-bench-flush-{os.getpid()}"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError:
        return None
    times: list[float] = []
    try:
        block, deadline = b"x" * 8192, time.monotonic() + seconds
        while time.monotonic() < deadline:
            os.pwrite(fd, block, (len(times) % 128) * 8192)
            started = time.perf_counter()
            os.fdatasync(fd)
            times.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        path.unlink()
    times.sort()

    def at(q: float) -> float:
        return round(times[min(len(times) - 1, int(q * len(times)))] * 1000, 2)

    return {
        "flushes": len(times),
        "p50_ms": at(0.5),
        "p99_ms": at(0.99),
        "p99_9_ms": at(0.999),
        "max_ms": round(times[-1] * 1000, 2),
        "over_50ms": sum(1 for t in times if t > 0.05),
    }


async def data_directory(url: str) -> str | None:
    conn = await asyncpg.connect(url)
    try:
        found: str | None = await conn.fetchval("SHOW data_directory")
    except asyncpg.InsufficientPrivilegeError:
        found = None
    finally:
        await conn.close()
    return found


def phase(target: Target, path: str, script: str, seconds: int) -> dict[str, Any]:
    """One wrk run; its figures, and the CPU use of the machine and of the API."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as file:
        file.write(script)
        file.flush()
        command = [target.wrk, "-t1", f"-c{target.concurrency}", f"-d{seconds}s"]
        command += ["--timeout", "10s", "-s", file.name, f"http://127.0.0.1:{target.port}{path}"]
        before, started = cpu_sample(target.server_pid), time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        after, elapsed = cpu_sample(target.server_pid), time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"wrk failed ({done.returncode}): {done.stdout}{done.stderr}")
    result = json.loads(lines[-1].removeprefix("RESULT "))
    cpus = os.cpu_count() or 1
    return {
        "requests": result["requests"],
        "per_second": round(result["requests"] / (result["duration_us"] / 1e6)),
        "p50_ms": round(result["p50_us"] / 1000, 2),
        "p99_ms": round(result["p99_us"] / 1000, 2),
        "failures": result["error_answers"] + result["socket_errors"],
        "cpu": {
            "machine_busy_percent": round(100 * (after.busy - before.busy) / elapsed / cpus),
            "api_percent_of_one_cpu": round(100 * (after.api - before.api) / elapsed),
        },
    }


async def prepare(database_url: str) -> str:
    admin = await asyncpg.connect(database_url.rpartition("/")[0] + "/postgres")
    name = f"intentd_bench_api_{secrets.token_hex(3)}"
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = database_url.rpartition("/")[0] + "/" + name
    pool = await create_pool(url, max_size=2)
    try:
        await migrate(pool)
        new = generate_key("test")
        async with pool.acquire() as conn:
            client = await clients.create(conn, "bench")
            await api_keys.insert_key(conn, new, client=client, mode="test", rate_limit=1_000_000)
    finally:
        await pool.close()
    return url + "#" + new.key


async def created_ids(url: str) -> list[int]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT id FROM intents ORDER BY id LIMIT $1", MAX_GET_IDS)
    finally:
        await conn.close()
    return [int(r["id"]) for r in rows]


async def drop(url: str) -> None:
    base, _, name = url.rpartition("/")
    admin = await asyncpg.connect(base + "/postgres")
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def wait_ready(port: int, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"intentd api exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1):
                return  # 200: every worker serves
        except OSError:
            time.sleep(0.2)
    raise SystemExit("intentd api did not start")


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--api-workers", type=int, default=2)
    parser.add_argument("--db-pool", type=int, default=8, help="connections per API process")
    args = parser.parse_args(argv)

    wrk = wrk_path()
    settings = load_settings(CONFIG)
    prepared = asyncio.run(prepare(settings.database.url.get_secret_value()))
    url, _, key = prepared.partition("#")
    port, metrics_port = free_port(), free_port()
    env = dict(os.environ)
    env.update(
        INTENTD__DATABASE__URL=url,
        INTENTD__DATABASE__MAX_POOL=str(args.db_pool),
        INTENTD__DATABASE__MIN_POOL=str(args.db_pool),
        INTENTD__OBSERVABILITY__METRICS_PORT=str(metrics_port),
        INTENTD__OBSERVABILITY__LOG_LEVEL="warning",
    )
    if "max_open_per_client" in IntentsConfig.model_fields:
        # One client makes every create here, and none is ever paid: lift its cap of
        # intents awaiting payment (older code has none, and would refuse the key).
        env["INTENTD__INTENTS__MAX_OPEN_PER_CLIENT"] = "10000000"
    command = [sys.executable, "-m", "intentd", "--config", str(CONFIG), "api"]
    command += ["--port", str(port), "--workers", str(args.api_workers)]
    server = subprocess.Popen(command, env=env, cwd=ROOT)
    try:
        wait_ready(metrics_port, server)
        usdc = next(t.address for t in settings.chains["BASE_TESTNET"].tokens)
        body = json.dumps(
            {
                "amount": "10",
                "tokenIn": usdc,
                "source_chain": "BASE_TESTNET",
                "destination_chain": "ARBITRUM_TESTNET",
                "recipient": PAYEE,
                "refund_address": PAYEE,
                "metadata": {"order": "bench"},
            }
        )
        target = Target(wrk, port, server.pid, args.concurrency)
        creating = create_script(key, body)
        phase(target, "/api/v1/intents", creating, 2)  # warm-up
        before = scrape(metrics_port)
        create = phase(target, "/api/v1/intents", creating, args.seconds)
        create["server"] = write_figures(before, scrape(metrics_port))
        ids = asyncio.run(created_ids(url))
        get = phase(target, "/", get_script(key, ids), args.seconds)
        report = {
            "concurrency": args.concurrency,
            "api_workers": args.api_workers,
            "db_pool_per_worker": args.db_pool,
            "cpus": os.cpu_count(),
            "load_generator": "wrk, 1 thread",
            "create": create,
            "get": get,
            "goals": {"create_per_second": 1000, "get_per_second": 5000, "p99_ms": 50},
        }
        directory = asyncio.run(data_directory(url))
        if directory is not None:
            report["disk_flush_idle"] = disk_flush_figures(directory)
        print(json.dumps(report, indent=2))
        if create["failures"] or get["failures"]:
            raise SystemExit("some requests failed")
    finally:
        server.terminate()
        server.wait(timeout=30)
        asyncio.run(drop(url))


if __name__ == "__main__":
    run(sys.argv[1:])
