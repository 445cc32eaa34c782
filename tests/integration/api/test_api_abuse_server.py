"""``intentd api`` as a process under abuse: huge bodies, idle connections (issue 11).

Memory is read from ``/proc/PID/status`` of the API process: ``VmHWM`` (its peak
resident set) against ``VmRSS`` before the abuse.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.integration.api.conftest import MakeKey, api_sections
from tests.integration.api.test_api_metrics import wait_ready
from tests.support import PAYEE, daemon_env, start_daemon

from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port

MIB = 1024 * 1024
UPLOAD = 200 * MIB


def memory_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


@asynccontextmanager
async def api_process(
    settings: Settings, log: Path, **env: str
) -> AsyncIterator[tuple[subprocess.Popen[bytes], int]]:
    """``intentd api`` as a user starts it, once ready: (process, API port)."""
    api_port, metrics_port = free_port(), free_port()
    environment = daemon_env(
        settings, INTENTD__OBSERVABILITY__METRICS_PORT=str(metrics_port), **env
    )
    process = start_daemon(["api", "--port", str(api_port)], environment, log)
    try:
        async with aiohttp.ClientSession() as http:
            await wait_ready(http, metrics_port)
        yield process, api_port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def upload(port: int, key: str, *, chunked: bool) -> int:
    """POST /api/v1/intents with a 200 MiB body, sent while no answer has come; the
    answer's status."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {UPLOAD}"
    writer.write(
        (
            "POST /api/v1/intents HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
            f"{framing}\r\n\r\n"
        ).encode()
    )
    answer = asyncio.create_task(reader.readuntil(b"\r\n\r\n"))
    chunk = b"[" + b" " * (MIB - 1)
    try:
        for _ in range(UPLOAD // MIB):
            if answer.done():
                break
            writer.write(f"{MIB:x}\r\n".encode() + chunk + b"\r\n" if chunked else chunk)
            await writer.drain()
        else:
            if chunked:
                writer.write(b"0\r\n\r\n")
                await writer.drain()
    except (ConnectionResetError, BrokenPipeError):
        pass
    try:
        head = await asyncio.wait_for(answer, 30)
    finally:
        writer.close()
    return int(head.split(b" ", 2)[1])


@pytest.mark.timeout(180)
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_200_mib_body_is_refused_without_being_held(
    make_settings: Callable[..., Settings],
    infra: dict[str, str],
    make_key: MakeKey,
    tmp_path: Path,
    chunked: bool,
) -> None:
    settings = make_settings(**api_sections(infra))
    key = await make_key("test", rate_limit=1_000_000)
    async with api_process(settings, tmp_path / "api.log") as (process, port):
        for _ in range(3):  # warm: the first requests load what a request needs
            assert await upload_small(port, key) == 400
        before = memory_kib(process.pid, "VmRSS")
        started = time.monotonic()
        status = await upload(port, key, chunked=chunked)
        elapsed = time.monotonic() - started
        peak = memory_kib(process.pid, "VmHWM")
    grew = (peak - before) / 1024
    print(
        f"200 MiB ({'chunked' if chunked else 'Content-Length'}): {status} after "
        f"{elapsed:.2f}s; RSS {before / 1024:.1f} MiB before, peak {peak / 1024:.1f} MiB "
        f"(+{grew:.1f} MiB)"
    )
    assert status == 413
    assert grew < 10, f"the API process grew by {grew:.1f} MiB"


async def upload_small(port: int, key: str) -> int:
    async with aiohttp.ClientSession() as http:
        headers: dict[str, Any] = {"Authorization": f"Bearer {key}"}
        url = f"http://127.0.0.1:{port}/api/v1/intents"
        async with http.post(url, json={}, headers=headers) as response:
            return response.status


IDLE = 1000
PARTIAL = b"POST /api/v1/intents HTTP/1.1\r\nHost: x\r\nX-Slow: "


def create_body(settings: Settings) -> dict[str, Any]:
    usdc = next(t.address for t in settings.chains["BASE_TESTNET"].tokens if t.symbol == "USDC")
    return {
        "amount": "10",
        "amountSymbol": "USDC",
        "tokenIn": usdc,
        "source_chain": "BASE_TESTNET",
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": PAYEE,
        "refund_address": PAYEE,
    }


async def create(port: int, key: str, body: dict[str, Any]) -> tuple[int, float]:
    """One create on a new connection: (status, seconds)."""
    started = time.monotonic()
    async with aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{port}/api/v1/intents"
        async with http.post(url, json=body, headers={"Authorization": f"Bearer {key}"}) as r:
            await r.read()
            return r.status, time.monotonic() - started


async def stalled(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(PARTIAL)
    await writer.drain()
    return reader, writer


@pytest.mark.timeout(180)
async def test_idle_connections_neither_stop_a_create_nor_stay(
    make_settings: Callable[..., Settings],
    infra: dict[str, str],
    make_key: MakeKey,
    tmp_path: Path,
) -> None:
    """Slowloris: 1,000 connections that sent part of their headers and stall."""
    settings = make_settings(**api_sections(infra))
    key = await make_key("test", rate_limit=1_000_000)
    body = create_body(settings)
    env = {"INTENTD__API__HEADER_TIMEOUT": "3", "INTENTD__API__MAX_CONNECTIONS": str(IDLE + 10)}
    async with api_process(settings, tmp_path / "api.log", **env) as (_, port):
        assert (await create(port, key, body))[0] == 201  # warm
        opened = time.monotonic()
        idle = [await stalled(port) for _ in range(IDLE)]
        status, seconds = await create(port, key, body)
        print(f"create while {IDLE} connections stall: {status} in {seconds * 1000:.1f} ms")
        assert status == 201
        assert seconds < 1.0  # generous: a behaviour, not a benchmark (aim: 100 ms)

        # Past the connection limit, a new connection is told so at once.
        extra = [await stalled(port) for _ in range(20)]
        answers = await asyncio.gather(
            *(asyncio.wait_for(r.read(), 5) for r, _ in extra), return_exceptions=True
        )
        refused = [a for a in answers if isinstance(a, bytes) and a.startswith(b"HTTP/1.1 503")]
        assert refused and all(b"retry-after: 1" in a.lower() for a in refused), answers[:3]

        # The stalled ones are cut after the header timeout.
        closed = await asyncio.gather(
            *(asyncio.wait_for(r.read(), 10) for r, _ in idle), return_exceptions=True
        )
        cut = time.monotonic() - opened
        print(
            f"{sum(c == b'' for c in closed)} of {IDLE} stalled connections cut after {cut:.1f} s"
        )
        assert all(c == b"" for c in closed), {type(c).__name__ for c in closed}
        for _, writer in idle + extra:
            writer.close()
        assert (await create(port, key, body))[0] == 201
