"""Debian's Prometheus scrapes the roles of a running intentd, as an operator runs it.

Each role runs as its own process with its metrics port (a poller, the lifecycle, an
executor, the API); a real ``prometheus`` server, started on a free loopback port with
a scratch config and storage and the rules of ``deploy/prometheus/alerts.yml``,
scrapes them every second while an intent is created through the API, paid on chain
and completed. Then its HTTP API must show every target up, the key series of each
role with the values this run produced, every alert rule evaluated without error, and
every query of the Grafana dashboard accepted.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from eth_account import Account
from tests.operator_kit import DEPLOY, tool
from tests.support import daemon_env, send_payments, start_daemon, wait_exit

from intentd.adapters.postgres import Pool, api_keys, clients
from intentd.credentials import generate_key
from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port

pytestmark = pytest.mark.e2e
SOURCE, DESTINATION = "BASE_TESTNET", "ARBITRUM_TESTNET"
ROLES = {
    "poll": ["poll", "--chain", SOURCE],
    "lifecycle": ["lifecycle"],
    "execute": ["execute", "--chain", DESTINATION],
    "api": ["api"],
}


@asynccontextmanager
async def prometheus(targets: dict[str, int], tmp_path: Path) -> AsyncIterator[str]:
    """A Prometheus server scraping ``targets`` (job name: metrics port) every second;
    yields its base URL and stops it at the end."""
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(DEPLOY / "prometheus" / "alerts.yml")],
        "scrape_configs": [
            {"job_name": f"intentd-{job}", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
            for job, port in targets.items()
        ],
    }
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    log = tmp_path / "prometheus.log"
    with log.open("ab") as out:
        server = subprocess.Popen(
            [
                tool("prometheus"),
                f"--config.file={path}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            await until(lambda: answers(http, f"{url}/-/ready"), 30, log, server)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


async def answers(http: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with http.get(url) as response:
            return response.status == 200
    except aiohttp.ClientError:
        return False


async def until(
    check: Callable[[], Awaitable[bool]],
    timeout: float,
    log: Path,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"exited {process.returncode}: {log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; {log.name}: {log.read_text()[-3000:]}")
        await asyncio.sleep(0.3)


async def query(http: aiohttp.ClientSession, url: str, promql: str) -> list[dict[str, Any]]:
    async with http.get(f"{url}/api/v1/query", params={"query": promql}) as response:
        body = await response.json()
    assert body["status"] == "success", (promql, body)
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


async def value(http: aiohttp.ClientSession, url: str, promql: str) -> float | None:
    found = await query(http, url, promql)
    return float(found[0]["value"][1]) if len(found) == 1 else None


@pytest.mark.timeout(300)
async def test_prometheus_scrapes_every_role_and_sees_the_key_series(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    ports = {role: free_port() for role in ROLES}
    api_port = free_port()
    env = daemon_env(
        settings,
        INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
        INTENTD__OBSERVABILITY__LOG_LEVEL="info",
    )
    key = generate_key("test")
    async with pool.acquire() as conn:
        client = await clients.create(conn, "e2e")
        await api_keys.insert_key(conn, key, client=client, mode="test", rate_limit=None)

    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs = {role: tmp_path / f"{role}.log" for role in ROLES}
    try:
        for role, args in ROLES.items():
            extra = ["--port", str(api_port)] if role == "api" else []
            processes[role] = start_daemon(
                [*args, *extra],
                {**env, "INTENTD__OBSERVABILITY__METRICS_PORT": str(ports[role])},
                logs[role],
            )
        async with aiohttp.ClientSession() as http, prometheus(ports, tmp_path) as url:
            for role, port in ports.items():
                ready = f"http://127.0.0.1:{port}/readyz"
                await until(lambda r=ready: answers(http, r), 60, logs[role], processes[role])

            # An intent created through the API, paid on the source chain.
            usdc = next(t.address for t in settings.chains[SOURCE].tokens if t.symbol == "USDC")
            payer_key = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
            payer = Account.from_key(payer_key).address
            body = {
                "amount": "3",
                "amountSymbol": "USDC",
                "tokenIn": usdc,
                "source_chain": SOURCE,
                "destination_chain": DESTINATION,
                "recipient": payer,
                "refund_address": payer,
            }
            headers = {"Authorization": f"Bearer {key.key}"}
            api = f"http://127.0.0.1:{api_port}/api/v1"
            async with http.post(f"{api}/intents", json=body, headers=headers) as response:
                record = await response.json()
                assert response.status == 201, record
            async with http.get(f"{api}/intents/{record['id']}") as response:
                assert response.status == 401  # a client error, counted as such
            total = int(Decimal(record["total_amount_in_asset_token"]) * 10**6)
            await asyncio.to_thread(
                send_payments,
                infra[f"INTENTD_{SOURCE}_RPC_URL"],
                payer_key,
                [(usdc, record["intent_address"], total)],
            )

            async def completed() -> bool:
                status = await pool.fetchval(
                    "SELECT status FROM intents WHERE id = $1", record["id"]
                )
                return bool(status == "COMPLETED")

            await until(completed, 120, logs["execute"])

            # What an operator's Prometheus must see: every target, every role's signals.
            # The first scrape of a target can come after the intent completed (a fast run):
            # wait for every target's first scrape, then require each to be up.
            targets = {f"intentd-{role}" for role in ROLES}

            async def up_now() -> dict[str, str]:
                return {s["metric"]["job"]: s["value"][1] for s in await query(http, url, "up")}

            async def every_target_scraped() -> bool:
                return set(await up_now()) == targets

            await until(every_target_scraped, 20, tmp_path / "prometheus.log")
            assert await up_now() == dict.fromkeys(targets, "1")
            expected = {
                f'intentd_poller_block{{job="intentd-poll",chain="{SOURCE}"}} > 0': 1,
                f'count(intentd_blocks_behind_head{{job="intentd-poll",chain="{SOURCE}"}})': 1,
                f'intentd_deposits_published_total{{chain="{SOURCE}"}}': 1,
                'intentd_deposits_total{job="intentd-lifecycle",disposition="credited"}': 1,
                f'intentd_deposit_to_funded_seconds_count{{chain="{SOURCE}"}}': 1,
                f'intentd_funded_to_completed_seconds_count{{chain="{DESTINATION}"}}': 1,
                'count(intentd_outbox_backlog{job="intentd-lifecycle"})': 1,
                f'intentd_executor_active{{job="intentd-execute",chain="{DESTINATION}"}}': 1,
                "intentd_action_outcomes_total"
                f'{{chain="{DESTINATION}",kind="prefill",outcome="confirmed"}}': 1,
                'sum(intentd_api_requests_total{route="/api/v1/intents",status="201"})': 1,
                'sum(intentd_api_requests_total{route="/api/v1/intents/{intent_id}",'
                'status="401"})': 1,
                'sum(intentd_api_request_seconds_count{job="intentd-api"})': 2,
                'intentd_intent_write_seconds_count{job="intentd-api"}': 1,
                # every role's dependencies, as its probes see them (docs/operations.md, Outages)
                'intentd_dependency_up{job="intentd-lifecycle",dependency="postgresql"}': 1,
                'intentd_dependency_up{job="intentd-lifecycle",dependency="kafka"}': 1,
                f'intentd_dependency_up{{job="intentd-poll",dependency="rpc",chain="{SOURCE}"}}': 1,
            }

            async def all_seen() -> bool:
                for promql, want in expected.items():
                    found = await value(http, url, promql)
                    if found is None or found < want:
                        return False
                return True

            try:
                await until(all_seen, 20, tmp_path / "prometheus.log")
            except AssertionError:
                seen = {promql: await value(http, url, promql) for promql in expected}
                raise AssertionError(f"series not as expected: {seen}") from None
            published = 'intentd_outbox_published_total{job="intentd-lifecycle"}'
            assert (await value(http, url, published) or 0) >= 3  # funded, initiated, completed

            # Every rule of alerts.yml loaded and evaluated against these series.
            rules_file = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
            names = {r["alert"] for g in rules_file["groups"] for r in g["rules"]}

            async def rules_evaluated() -> bool:
                async with http.get(f"{url}/api/v1/rules") as response:
                    groups = (await response.json())["data"]["groups"]
                health = {r["name"]: r["health"] for g in groups for r in g["rules"]}
                assert set(health) == names
                return all(h == "ok" for h in health.values())

            await until(rules_evaluated, 20, tmp_path / "prometheus.log")

            # Every query of the dashboard is accepted by this Prometheus.
            board = json.loads((DEPLOY / "grafana" / "intentd.json").read_text())
            for panel in board["panels"]:
                for target in panel.get("targets", []):
                    await query(http, url, target["expr"].replace("$__rate_interval", "1m"))
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
        codes = {role: await wait_exit(p, 40) for role, p in processes.items()}
    assert codes == dict.fromkeys(ROLES, 0), {r: logs[r].read_text()[-2000:] for r in ROLES}
