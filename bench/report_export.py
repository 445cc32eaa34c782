"""Benchmark: the reports' exports and reconciliation of a million rows, served by
``intentd api``: time, and the server's resident memory.

``python -m bench report-export [--intents N] [--others F] [--exports payments,...]``
creates a database of its own (next to ``make infra-up``'s), migrates it (so the
indexes are migration 0017's) and loads N completed intents of one busy client (default
500,000; plus F x N of other clients, default 0.2, which the scans pass over): each
paid by one deposit, its prefill paid by the relayer and the relayer repaid by the
intent address after a gas top-up, so 2 actions and 3 chain transactions with signed
bytes (type 2, as ``adapters.evm.signer`` records them) per intent, spread over 30 days.
So ``payments`` has 2N rows (10^6 by default), ``deposits`` N, ``gas`` 4N, and the
reconciliation reads N intents with their records.

Then it starts ``intentd --config config/local.toml api`` on that database, as a user
runs it, and downloads each report of the busy client over the 30 days with a test key,
reading the body as it comes (counting lines, holding nothing). Per report: rows, MB,
seconds to the first byte and to the last, rows per second, and the server's RSS
sampled every 100 ms (``VmRSS``) and its peak (``VmHWM``), before and after. The
reconciliation must report no mismatch. JSON out; the database is dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import asyncpg
import rlp

from bench.poller_env import ROOT, infra_env
from bench.poller_memory import rss_kib
from intentd.adapters.postgres import api_keys, create_pool, migrate
from intentd.adapters.postgres.clients import Client
from intentd.credentials import generate_key

BUSY = uuid.UUID(int=1)
START = datetime(2026, 10, 1, tzinfo=UTC)
DAYS = 30
BATCH = 50_000
AMOUNT = 10_000_000
REPORTS = ("payments", "deposits", "refunds", "fees", "gas", "reconciliation")

_INTENTS = """
INSERT INTO intents (id, client_id, request_hash, initial_amount, source_chain,
    destination_chain, token_in, token_out, token_out_decimals, asset_token_symbol,
    asset_token_decimals, total_due, amount_out, total_in_usd, address_index, intent_address,
    recipient, refund_address, relayer, status, funding_status, received, tx_hash,
    metadata, expires_at, created_at, terminal_at)
SELECT n, CASE WHEN n % $1 = 0 THEN $3::uuid ELSE $2::uuid END, 'h', '10', 'BASE_TESTNET',
    'ARBITRUM_TESTNET', $4, $5, 6, 'USDC', 6, $6, $6, 10, n, '0x' || lpad(to_hex(n), 40, '0'),
    '0xa' || lpad(to_hex(n % 997), 39, '0'), '0xb' || lpad(to_hex(n % 991), 39, '0'), $7,
    'COMPLETED', 'EXACT', $6, '0x' || lpad(to_hex(n), 64, '0'),
    jsonb_build_object('order_id', 'ord-' || n),
    $8::timestamptz + make_interval(secs => n * $9 + 3600),
    $8::timestamptz + make_interval(secs => n * $9),
    $8::timestamptz + make_interval(secs => n * $9 + 60)
FROM generate_series($10::bigint, $11::bigint) AS n
"""
_DEPOSITS = """
INSERT INTO deposits (id, chain, tx_hash, log_index, transfer_index, block_number,
    block_hash, block_time, token, from_address, to_address, amount, intent_id, disposition)
SELECT n, 'BASE_TESTNET', '0xd' || lpad(to_hex(n), 63, '0'), 0, 0, n, '0x' || lpad('', 64, 'e'),
    $1::timestamptz + make_interval(secs => n * $2 + 10), $3, '0x' || lpad('', 40, 'f'),
    '0x' || lpad(to_hex(n), 40, '0'), $4, n, 'credited'
FROM generate_series($5::bigint, $6::bigint) AS n
"""
_ACTIONS = """
INSERT INTO actions (id, intent_id, kind, sequence, chain, token, amount, to_address, status,
    signer_kind, signer_index, tx_hash, amount_sent, gas_cost, created_at, updated_at)
SELECT 2 * n - k, n, CASE k WHEN 1 THEN 'prefill' ELSE 'relayer_refund' END, 1,
    CASE k WHEN 1 THEN 'ARBITRUM_TESTNET' ELSE 'BASE_TESTNET' END,
    CASE k WHEN 1 THEN $1 ELSE $2 END, $3,
    CASE k WHEN 1 THEN '0xa' || lpad(to_hex(n % 997), 39, '0') ELSE $4 END, 'confirmed',
    CASE k WHEN 1 THEN 'relayer' ELSE 'intent' END, CASE k WHEN 1 THEN NULL ELSE n END,
    CASE k WHEN 1 THEN '0xa' ELSE '0xb' END || lpad(to_hex(n), 63, '0'), $3,
    100000000000000::numeric,
    $5::timestamptz + make_interval(secs => n * $6 + 20),
    $5::timestamptz + make_interval(secs => n * $6 + 30 * (2 - k))
FROM generate_series($7::bigint, $8::bigint) AS n, (VALUES (1), (0)) AS kinds (k)
"""
_TX_COLUMNS = [
    "id", "action_id", "purpose", "chain", "signer", "nonce", "tx_hash", "raw_tx",
    "to_address", "value", "gas_limit", "max_fee_per_gas", "max_priority_fee_per_gas",
    "status", "block_number", "block_hash", "gas_used", "effective_gas_price", "created_at",
    "updated_at",
]  # fmt: skip


def _template(data_length: int) -> tuple[bytes, int, int]:
    """Signed type-2 bytes with a 20-byte ``to`` and call data of ``data_length`` bytes at
    fixed offsets (their lengths fix every RLP header): (bytes, to at, data at)."""
    to, data = b"\x11" * 20, b"\x22" * data_length
    fields = [84532, 7, 10**8, 3 * 10**9, 65_000, to, 0, data, [], 1, 2**255 + 7, 2**255 + 9]
    raw = b"\x02" + rlp.encode(fields)
    return raw, raw.index(to), raw.index(data) if data else -1


_ERC20, _TO_AT, _DATA_AT = _template(68)
_NATIVE = b"\x02" + rlp.encode(
    [84532, 7, 10**8, 3 * 10**9, 21_000, b"\x11" * 20, 10**15, b"", [], 1, 2**255 + 7, 2**255 + 9]
)
_NATIVE_TO_AT = _NATIVE.index(b"\x11" * 20)


def _erc20(token: str, recipient: str, amount: int) -> bytes:
    data = bytes.fromhex("a9059cbb") + bytes(12) + bytes.fromhex(recipient[2:])
    data += amount.to_bytes(32, "big")
    raw = bytearray(_ERC20)
    raw[_TO_AT : _TO_AT + 20] = bytes.fromhex(token[2:])
    raw[_DATA_AT : _DATA_AT + 68] = data
    return bytes(raw)


def _topup(to: str) -> bytes:
    raw = bytearray(_NATIVE)
    raw[_NATIVE_TO_AT : _NATIVE_TO_AT + 20] = bytes.fromhex(to[2:])
    return bytes(raw)


def _transactions(first: int, last: int, env: dict[str, str], step: float) -> list[tuple[Any, ...]]:
    usdc_in = env["INTENTD_BASE_TESTNET_USDC"].lower()
    usdc_out = env["INTENTD_ARBITRUM_TESTNET_USDC"].lower()
    relayer = env["INTENTD_RELAYER_ADDRESS"].lower()
    tank = env["INTENTD_GAS_TANK_ADDRESS"].lower()
    rows = []
    for n in range(first, last + 1):
        address, recipient = f"0x{n:040x}", f"0xa{n % 997:039x}"
        at = START + timedelta(seconds=n * step)
        fields = (65_000, 3 * 10**9, 10**8, "confirmed", n, "0x" + "c" * 64, 50_000, 2 * 10**9)
        prefill, repay = 2 * n - 1, 2 * n
        rows.append(
            (3 * n - 2, prefill, "transfer", "ARBITRUM_TESTNET", relayer, n,
             f"0xa{n:063x}", _erc20(usdc_out, recipient, AMOUNT), usdc_out, 0, *fields,
             at + timedelta(seconds=20), at + timedelta(seconds=30))
        )  # fmt: skip
        rows.append(
            (3 * n - 1, repay, "gas_topup", "BASE_TESTNET", tank, n, f"0xc{n:063x}",
             _topup(address), address, 10**15, *fields, at + timedelta(seconds=40),
             at + timedelta(seconds=45))
        )  # fmt: skip
        rows.append(
            (3 * n, repay, "transfer", "BASE_TESTNET", address, 0, f"0xb{n:063x}",
             _erc20(usdc_in, relayer, AMOUNT), usdc_in, 0, *fields, at + timedelta(seconds=50),
             at + timedelta(seconds=60))
        )  # fmt: skip
    return rows


async def load(conn: asyncpg.Connection, intents: int, others: int, env: dict[str, str]) -> float:
    step = DAYS * 86_400 / (intents + others)
    usdc_in = env["INTENTD_BASE_TESTNET_USDC"].lower()
    usdc_out = env["INTENTD_ARBITRUM_TESTNET_USDC"].lower()
    relayer = env["INTENTD_RELAYER_ADDRESS"].lower()
    other = uuid.uuid4()
    await conn.execute("INSERT INTO clients (id, name) VALUES ($1, 'other')", other)
    began = time.perf_counter()
    total = intents + others
    every = total // others if others else total + 1  # every k-th intent is another client's
    for first in range(1, total + 1, BATCH):
        last = min(first + BATCH - 1, total)
        await conn.execute(
            _INTENTS, every, BUSY, other, usdc_in, usdc_out, AMOUNT, relayer, START, step,
            first, last,
        )  # fmt: skip
        await conn.execute(_DEPOSITS, START, step, usdc_in, AMOUNT, first, last)
        await conn.execute(_ACTIONS, usdc_out, usdc_in, AMOUNT, relayer, START, step, first, last)
        await conn.copy_records_to_table(
            "chain_transactions",
            records=_transactions(first, last, env, step),
            columns=_TX_COLUMNS,
        )
    await conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - began


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _download(
    http: aiohttp.ClientSession, url: str, params: dict[str, str], pid: int
) -> dict[str, Any]:
    before = rss_kib(pid)[0]
    samples = [before]
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            samples.append(rss_kib(pid)[0])
            await asyncio.sleep(0.1)

    sampler = asyncio.create_task(sample())
    began = time.perf_counter()
    first = None
    size = lines = 0
    tail = b""
    try:
        async with http.get(url, params=params) as response:
            if response.status != 200:
                raise SystemExit(f"{url}: {response.status} {await response.text()}")
            async for chunk in response.content.iter_any():
                first = first or time.perf_counter() - began
                size += len(chunk)
                lines += chunk.count(b"\n")
                tail = (tail + chunk)[-4096:]
    finally:
        done.set()
        await sampler
    spent = time.perf_counter() - began
    return {
        "rows": max(lines - 1, 0),
        "mb": round(size / 2**20, 1),
        "first_byte_s": round(first or spent, 3),
        "seconds": round(spent, 1),
        "rows_per_s": round(max(lines - 1, 0) / spent),
        "server_rss_before_mib": round(before / 1024, 1),
        "server_rss_max_sampled_mib": round(max(samples) / 1024, 1),
        "tail": tail.decode(errors="replace"),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    env = infra_env()
    base = env["INTENTD_DATABASE_URL"].rpartition("/")[0]
    name = f"intentd_bench_reports_{secrets.token_hex(3)}"
    admin = await asyncpg.connect(base + "/postgres")
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = f"{base}/{name}"
    others = int(args.intents * args.others)
    result: dict[str, Any] = {"intents": args.intents, "other_clients_intents": others}
    try:
        pool = await create_pool(url, max_size=2)
        try:
            await migrate(pool)
            async with pool.acquire() as conn:
                result["load_seconds"] = round(await load(conn, args.intents, others, env), 1)
                client = Client(BUSY, "busy", datetime.now(UTC))
                await conn.execute("INSERT INTO clients (id, name) VALUES ($1, 'busy')", BUSY)
                key = generate_key("test")
                await api_keys.insert_key(conn, key, client=client, mode="test", rate_limit=None)
                result["busy_client_intents"] = await conn.fetchval(
                    "SELECT count(*) FROM intents WHERE client_id = $1", BUSY
                )
        finally:
            await pool.close()
        result["reports"] = await serve_and_download(url, key.key, args.exports.split(","))
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    return result


async def serve_and_download(url: str, key: str, reports: list[str]) -> dict[str, Any]:
    port = _free_port()
    env = {
        **os.environ,
        "INTENTD__DATABASE__URL": url,
        "INTENTD__API__PORT": str(port),
        "INTENTD__OBSERVABILITY__METRICS_PORT": "0",
        "INTENTD__OBSERVABILITY__LOG_LEVEL": "warning",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "intentd", "--config", str(ROOT / "config/local.toml"), "api"],
        cwd=ROOT,
        env=env,
    )
    found: dict[str, Any] = {}
    params = {"from": START.isoformat(), "to": (START + timedelta(days=DAYS + 1)).isoformat()}
    try:
        async with aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {key}"}, timeout=aiohttp.ClientTimeout(total=None)
        ) as http:
            api = f"http://127.0.0.1:{port}/api/v1"
            for _ in range(300):
                try:
                    async with http.get(f"{api}/chains"):
                        break
                except aiohttp.ClientConnectionError:
                    if process.poll() is not None:
                        raise SystemExit(f"intentd api exited with {process.returncode}") from None
                    await asyncio.sleep(0.1)
            found["server_rss_idle_mib"] = round(rss_kib(process.pid)[0] / 1024, 1)
            for report in reports:
                path = f"{api}/reports/{report}"
                got = await _download(http, path, params, process.pid)
                if report == "reconciliation":
                    summary = json.loads("{" + got["tail"][got["tail"].index('"intents"') :])
                    got["mismatches_found"] = summary["intents_with_mismatches"]
                    got["intents_reconciled"] = summary["intents"]
                    got["rows"] = summary["intents"]
                    got["rows_per_s"] = round(got["rows"] / got["seconds"])
                got.pop("tail")
                found[report] = got
            found["server_peak_rss_mib"] = round(rss_kib(process.pid)[1] / 1024, 1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    return found


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench report-export", description=__doc__.splitlines()[0]
    )
    p.add_argument("--intents", type=int, default=500_000, help="the busy client's intents")
    p.add_argument("--others", type=float, default=0.2, help="other clients' intents, x N")
    p.add_argument(
        "--exports",
        default="payments,deposits,reconciliation",
        help=f"comma list of {', '.join(REPORTS)}",
    )
    return p


def run(argv: list[str]) -> None:
    print(json.dumps(asyncio.run(main_async(parser().parse_args(argv))), indent=2))
