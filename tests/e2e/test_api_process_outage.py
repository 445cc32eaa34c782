"""``intentd api`` (one process, and ``--workers 2``) rides out PostgreSQL going away.

The daemon runs as an operator runs it, its database URL pointing at a
:class:`TcpFaultProxy` in front of the real PostgreSQL. The proxy is cut (every
connection reset, new ones refused), then stalled (connections open, nothing
forwarded). Each time: ``/readyz`` turns 503, every API answer is a 503
``database_unavailable`` with ``Retry-After`` (a read, a create), then, once the
proxy passes traffic again, ``/readyz`` is 200 and the same process answers again
(no restart); the create retried with its ``Idempotency-Key`` is one intent. The
log holds no traceback and no 500, and each process tells each outage in a start
and an end line. SIGTERM then stops it cleanly.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.support import daemon_env, start_daemon, wait_exit
from tests.support import run_cli as cli

from intentd.adapters.postgres import Pool
from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port
from intentd_dev.fault_proxy import TcpFaultProxy, proxy_for, through_proxy

pytestmark = pytest.mark.e2e
PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
SETTLE = 30.0  # seconds for the daemon to see the outage, or its end


async def until(check: Callable[[], Awaitable[bool]], what: str, log: Path) -> None:
    deadline = time.monotonic() + SETTLE
    while not await check():
        assert time.monotonic() < deadline, f"{what}\n{log.read_text()[-3000:]}"
        await asyncio.sleep(0.1)


@dataclass
class Daemon:
    """``intentd api`` through the proxy: its URLs, key and log."""

    process: subprocess.Popen[bytes]
    api: str
    readyz: str
    key: str
    log: Path


def start(settings: Settings, proxy: TcpFaultProxy, log: Path, workers: int) -> Daemon:
    direct = daemon_env(settings)  # the CLI blocks this event loop, which runs the proxy
    cli(direct, "clients", "create", "outage-shop", "--exist-ok")
    key = cli(direct, "keys", "create", "--client", "outage-shop", "--mode", "test")["api_key"]
    api_port, health_port = free_port(), free_port()
    env = daemon_env(
        settings,
        INTENTD__DATABASE__URL=through_proxy(settings.database.url.get_secret_value(), proxy),
        INTENTD__API__PORT=str(api_port),
        INTENTD__API__DB_TIMEOUT="2",
        INTENTD__OBSERVABILITY__METRICS_PORT=str(health_port),
        INTENTD__OBSERVABILITY__LOG_LEVEL="info",
    )
    args = ["api"] if workers == 1 else ["api", "--workers", str(workers)]
    return Daemon(
        start_daemon(args, env, log),
        f"http://127.0.0.1:{api_port}/api/v1",
        f"http://127.0.0.1:{health_port}/readyz",
        key,
        log,
    )


@pytest.mark.timeout(300)
@pytest.mark.parametrize("workers", [1, 2])
async def test_intentd_api_answers_503_through_an_outage_and_recovers_by_itself(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path, workers: int
) -> None:
    settings, pool = own_stack
    daemon: Daemon | None = None
    async with proxy_for(settings.database.url.get_secret_value(), 5432) as proxy:
        try:
            daemon = start(settings, proxy, tmp_path / "api.log", workers)
            await through_a_cut_and_a_stall(daemon, proxy, pool, infra, workers)
            daemon.process.send_signal(signal.SIGTERM)
            assert await wait_exit(daemon.process, 40) == 0, daemon.log.read_text()[-3000:]
        finally:
            if daemon is not None and daemon.process.poll() is None:
                daemon.process.kill()

    text = daemon.log.read_text()
    events = log_events(daemon.log)
    assert "Traceback" not in text and '"traceback"' not in text, text[-3000:]
    assert "unhandled error" not in events
    # Each process tells each outage in two lines, whatever the requests in between.
    database = database_events(daemon.log)
    assert database.count("dependency unavailable") == 2 * workers, events
    assert database.count("dependency available again") == 2 * workers, events


def log_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line[:1] == "{"]


def log_events(log: Path) -> list[str]:
    return [line.get("event", "") for line in log_lines(log)]


def database_events(log: Path) -> list[str]:
    """The events of the process's outage log about PostgreSQL."""
    return [
        line.get("event", "") for line in log_lines(log) if line.get("dependency") == "postgresql"
    ]


async def through_a_cut_and_a_stall(
    daemon: Daemon, proxy: TcpFaultProxy, pool: Pool, infra: dict[str, str], workers: int
) -> None:
    """Each fault lasts until every process has seen it (a stall shorter than a
    process's probe bound goes unnoticed there, rightly)."""
    body = {
        "amount": "3",
        "tokenIn": infra["INTENTD_BASE_TESTNET_USDC"],
        "source_chain": "BASE_TESTNET",
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": PAYEE,
        "refund_address": PAYEE,
    }
    auth = {"Authorization": f"Bearer {daemon.key}"}
    log = daemon.log
    async with aiohttp.ClientSession() as http:

        async def ready_is(expected: int) -> bool:
            assert daemon.process.poll() is None, log.read_text()[-3000:]
            try:
                async with http.get(daemon.readyz) as answer:
                    return answer.status == expected
            except aiohttp.ClientError:
                return False

        async def call(method: str, path: str, **kwargs: Any) -> tuple[int, Any, str | None]:
            async with http.request(method, f"{daemon.api}{path}", **kwargs) as answer:
                data = await answer.json(content_type=None)
                return answer.status, data, answer.headers.get("Retry-After")

        async def told(event: str, times: int) -> bool:
            """Every process has logged ``event`` of PostgreSQL (each outage is
            ``workers`` times)."""
            return database_events(log).count(event) >= times

        await until(lambda: ready_is(200), "the API did not get ready", log)
        status, intent, _ = await call("POST", "/intents", json=body, headers=auth)
        assert status == 201, intent

        for outages, fault in enumerate(("cut", "stall"), start=1):
            seen = outages * workers
            if fault == "cut":
                await proxy.cut()
            else:
                proxy.stall()
            await until(lambda: ready_is(503), f"/readyz stayed 200 ({fault})", log)
            await until(lambda: told("dependency unavailable", seen), fault, log)  # noqa: B023
            retried = {**auth, "Idempotency-Key": f"outage-{secrets.token_hex(6)}"}
            answers = [
                await call("GET", f"/intents/{intent['id']}", headers=auth),
                await call("POST", "/intents", json=body, headers=retried),
                await call("GET", "/intents", headers=auth),
            ]
            for status, data, retry_after in answers:
                assert (status, data["code"]) == (503, "database_unavailable"), data
                assert retry_after is not None and retry_after.isdigit()

            await proxy.restore()
            await until(lambda: ready_is(200), f"/readyz stayed 503 ({fault})", log)
            await until(lambda: told("dependency available again", seen), fault, log)  # noqa: B023
            status, again, _ = await call("GET", f"/intents/{intent['id']}", headers=auth)
            assert status == 200, again
            status, created, _ = await call("POST", "/intents", json=body, headers=retried)
            assert status == 201, created
            stored = await pool.fetchval(
                "SELECT count(*) FROM intents WHERE idempotency_key = $1",
                retried["Idempotency-Key"],
            )
            assert stored == 1
