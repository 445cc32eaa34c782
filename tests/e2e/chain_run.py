"""``intentd run`` on the two anvil chains for the end-to-end tests of real payments,
and what they wait for: a condition in its database, the API to take an intent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from eth_account import Account
from tests.support import daemon_env, start_daemon, wait_exit
from tests.support import run_cli as cli

from intentd.adapters.postgres import Pool
from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port

SOURCE, DESTINATION = "BASE_TESTNET", "ARBITRUM_TESTNET"
UNIT = 10**6
"""One USDC, in base units."""


def five_usdc(usdc: str, **fields: Any) -> dict[str, Any]:
    """An intent's request: 5 USDC (``usdc``, on the source) to a new recipient on the
    destination, refunds to a new address; ``fields`` replace or add."""
    return {
        "amount": "5",
        "amountSymbol": "USDC",
        "tokenIn": usdc,
        "source_chain": SOURCE,
        "destination_chain": DESTINATION,
        "recipient": str(Account.create().address),
        "refund_address": str(Account.create().address),
        **fields,
    }


@dataclass
class ChainRun:
    """A running ``intentd run``: its environment, its database, its API's ``/api/v1``
    (when it was given a port)."""

    env: dict[str, str]
    pool: Pool
    api: str

    async def until(self, query: str, *args: Any, timeout: float, what: str) -> None:
        """Until ``query`` (with ``args``) is true, or fail after ``timeout`` seconds
        naming ``what`` and listing the actions not yet settled."""
        deadline = time.monotonic() + timeout
        while not await self.pool.fetchval(query, *args):
            if time.monotonic() > deadline:
                open_actions = await self.pool.fetch(
                    "SELECT id, intent_id, kind, reason, chain, token, amount, status, attempts,"
                    " last_error FROM actions WHERE status NOT IN ('confirmed', 'cancelled')"
                )
                raise AssertionError(f"timed out waiting for {what}; open actions: {open_actions}")
            await asyncio.sleep(0.3)

    async def until_status(self, record: dict[str, Any], status: str, timeout: float) -> None:
        """Until ``record``'s intent has ``status``."""
        await self.until(
            "SELECT status = $2 FROM intents WHERE id = $1",
            record["id"],
            status,
            timeout=timeout,
            what=f"intent {record['id']} {status}",
        )

    async def until_credited(self, record: dict[str, Any], what: str) -> None:
        """Until a payment to ``record``'s intent is credited (60 s at most)."""
        query = "SELECT received > 0 FROM intents WHERE id = $1"
        await self.until(query, record["id"], timeout=60, what=what)

    def shop_key(self, client: str) -> str:
        """A test API key of ``client`` (created if new), made with the CLI."""
        cli(self.env, "clients", "create", client, "--exist-ok")
        key: str = cli(self.env, "keys", "create", "--client", client, "--mode", "test")["api_key"]
        return key

    async def create_intent(self, http: aiohttp.ClientSession, body: Any) -> dict[str, Any]:
        """``POST /intents`` with ``body``: the record (201), retried while the API is
        not listening yet (it starts with the other roles)."""
        for _ in range(100):
            try:
                async with http.post(f"{self.api}/intents", json=body) as response:
                    assert response.status == 201, await response.text()
                    record: dict[str, Any] = await response.json()
                    return record
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.3)
        raise AssertionError("the API did not start")


@asynccontextmanager
async def running_on_chains(
    settings: Settings, pool: Pool, log: Path, *, api: bool = False, **env: str
) -> AsyncIterator[ChainRun]:
    """``intentd run`` on ``settings``' resources, one confirmation on each chain, the
    API on a free port if ``api``, ``env`` added; once both pollers have a cursor. On
    exit it is stopped and must exit 0 (its log is ``log``)."""
    port = free_port() if api else 0
    full = daemon_env(
        settings,
        INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
        **({"INTENTD__API__PORT": str(port)} if api else {}),
        **env,
    )
    daemon = start_daemon(["run"], full, log)
    run = ChainRun(full, pool, f"http://127.0.0.1:{port}/api/v1" if api else "")
    try:
        await run.until("SELECT count(*) = 2 FROM chain_cursors", timeout=60, what="both pollers")
        yield run
    finally:
        daemon.terminate()
        code = await wait_exit(daemon, 60)
    assert code == 0, log.read_text()[-5000:]
