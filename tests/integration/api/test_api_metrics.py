"""Prometheus figures of the API: per route template and status, and summed over the
workers of ``intentd api --workers N``, whose parent also watches them."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from tests.integration.api.conftest import Api, MakeKey, api_sections
from tests.support import daemon_env, start_daemon, wait_exit

from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port

pytestmark = pytest.mark.integration

BY_ID = "/api/v1/intents/{intent_id}"


def counted(method: str, route: str, status: int) -> float:
    labels = {"method": method, "route": route, "status": str(status)}
    return REGISTRY.get_sample_value("intentd_api_requests_total", labels) or 0.0


def timed(method: str, route: str) -> float:
    labels = {"method": method, "route": route}
    return REGISTRY.get_sample_value("intentd_api_request_seconds_count", labels) or 0.0


async def test_requests_are_counted_by_route_template_and_status(
    api: Api, make_key: MakeKey
) -> None:
    key = await make_key("test")
    before = {
        "found": counted("GET", BY_ID, 404),
        "unauthorized": counted("GET", BY_ID, 401),
        "unmatched": counted("GET", "unmatched", 404),
        "tokens": counted("GET", "/api/v1/chains/tokens/all", 200),
        "timed": timed("GET", BY_ID),
    }

    for intent_id in (987654321, 987654322, 987654323):  # served by the hot path
        status, _, _ = await api.call("GET", f"/intents/{intent_id}", key)
        assert status == 404
    status, _, _ = await api.call("GET", "/intents/5", None)
    assert status == 401
    status, _, _ = await api.call("GET", "/no/such/route", key)
    assert status == 404
    status, _, _ = await api.call("GET", "/chains/tokens/all", key)  # a FastAPI route
    assert status == 200

    assert counted("GET", BY_ID, 404) - before["found"] == 3
    assert counted("GET", BY_ID, 401) - before["unauthorized"] == 1
    assert counted("GET", "unmatched", 404) - before["unmatched"] == 1
    assert counted("GET", "/api/v1/chains/tokens/all", 200) - before["tokens"] == 1
    assert timed("GET", BY_ID) - before["timed"] == 4
    names = {
        sample.labels.get("route")
        for family in REGISTRY.collect()
        if family.name == "intentd_api_requests"
        for sample in family.samples
    }
    assert not any("987654321" in (name or "") for name in names)


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


async def scrape(http: aiohttp.ClientSession, port: int) -> dict[tuple[str, str, str], float]:
    async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
        text = await response.text()
    names = {family.name for family in text_string_to_metric_families(text)}
    assert names and all(name.startswith(("intentd_api_", "intentd_intent")) for name in names)
    return {
        (s.labels["method"], s.labels["route"], s.labels["status"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "intentd_api_requests"
        for s in family.samples
        if s.name == "intentd_api_requests_total"
    }


async def on_one_connection(port: int, path: str, key: str, count: int) -> list[int]:
    """Statuses of ``count`` GETs sent one after another on one kept-alive connection
    (so to one worker)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n\r\n"
    ).encode()
    statuses = []
    try:
        for _ in range(count):
            writer.write(request)
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            statuses.append(int(head[0].split()[1]))
            fields = dict(line.split(":", 1) for line in head[1:] if ":" in line)
            length = int({k.lower(): v for k, v in fields.items()}["content-length"])
            await reader.readexactly(length)
    finally:
        writer.close()
        await writer.wait_closed()
    return statuses


async def wait_ready(http: aiohttp.ClientSession, port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            async with http.get(f"http://127.0.0.1:{port}/readyz") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise AssertionError("intentd api --workers did not become ready")


@pytest.mark.timeout(180)
async def test_workers_are_summed_watched_and_stopped(
    make_settings: Callable[..., Settings],
    infra: dict[str, str],
    make_key: MakeKey,
    tmp_path: Path,
) -> None:
    settings = make_settings(**api_sections(infra))
    key = await make_key("test", rate_limit=1_000_000)
    api_port, metrics_port = free_port(), free_port()
    env = daemon_env(
        settings,
        INTENTD__OBSERVABILITY__METRICS_PORT=str(metrics_port),
        INTENTD__API__WORKERS="2",
    )
    process = start_daemon(["api", "--port", str(api_port)], env, tmp_path / "api.log")
    try:
        async with aiohttp.ClientSession() as http:
            await wait_ready(http, metrics_port)
            workers = children(process.pid)
            assert len(workers) == 2

            # Fresh connections, so that the kernel spreads them over both workers.
            for _ in range(40):
                async with aiohttp.ClientSession() as one:
                    url = f"http://127.0.0.1:{api_port}/api/v1/intents/424242"
                    headers = {"Authorization": f"Bearer {key}"}
                    async with one.get(url, headers=headers) as response:
                        assert response.status == 404
            # A worker counts a request once its answer is sent, so the last one may
            # be counted a moment after the client has read it.
            deadline = time.monotonic() + 5
            figures = await scrape(http, metrics_port)
            while figures.get(("GET", BY_ID, "404")) != 40 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                figures = await scrape(http, metrics_port)
            assert figures[("GET", BY_ID, "404")] == 40

            # Each worker enforces its share of a key's limit: one connection reaches
            # one worker, whose bucket holds 20 / 2 workers = 10 requests and refills
            # at 10 per second (with the whole limit: 20, refilled at 20 per second).
            limited = await make_key("test", rate_limit=20)
            started = time.monotonic()
            answers = await on_one_connection(api_port, "/api/v1/intents/424242", limited, 30)
            elapsed = time.monotonic() - started
            assert set(answers) == {404, 429}
            assert 10 <= answers.count(404) <= 11 + 10 * elapsed, (answers, elapsed)

            # A worker that dies takes the whole down: the service manager restarts it.
            os.kill(workers[0], signal.SIGKILL)
            assert await wait_exit(process, 40) != 0
            deadline = time.monotonic() + 30  # until the other worker is gone, not 0.5 s
            while any(Path(f"/proc/{pid}").exists() for pid in workers):
                assert time.monotonic() < deadline, "a worker outlived the whole"
                await asyncio.sleep(0.05)
            assert all(not Path(f"/proc/{pid}").exists() for pid in workers)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = (tmp_path / "api.log").read_text()
    assert "api worker exited" in log


@asynccontextmanager
async def parent_with_workers(
    settings: Settings, count: int, log: Path
) -> AsyncIterator[tuple[subprocess.Popen[bytes], list[int]]]:
    """``intentd api --workers count`` as a user starts it, once ready; killed at the end
    if still running."""
    api_port, metrics_port = free_port(), free_port()
    env = daemon_env(settings, INTENTD__OBSERVABILITY__METRICS_PORT=str(metrics_port))
    process = start_daemon(["api", "--port", str(api_port), "--workers", str(count)], env, log)
    try:
        async with aiohttp.ClientSession() as http:
            await wait_ready(http, metrics_port)
        workers = children(process.pid)
        assert len(workers) == count
        yield process, workers
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.timeout(120)
async def test_sigterm_stops_every_worker(
    make_settings: Callable[..., Settings], infra: dict[str, str], tmp_path: Path
) -> None:
    settings = make_settings(**api_sections(infra))
    async with parent_with_workers(settings, 3, tmp_path / "api.log") as (process, workers):
        process.send_signal(signal.SIGTERM)
        assert await wait_exit(process, 60) == 0
        assert all(not Path(f"/proc/{pid}").exists() for pid in workers)


@pytest.mark.timeout(120)
async def test_workers_of_a_killed_parent_stop(
    make_settings: Callable[..., Settings], infra: dict[str, str], tmp_path: Path
) -> None:
    """No orphan keeps the port: the workers get SIGTERM when their parent dies."""
    settings = make_settings(**api_sections(infra))
    async with parent_with_workers(settings, 2, tmp_path / "api.log") as (process, workers):
        process.kill()
        process.wait()
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in workers):
            assert time.monotonic() < deadline, "a worker outlived its parent"
            await asyncio.sleep(0.1)
