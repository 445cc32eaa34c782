"""``intentd run`` on the two anvil chains for the end-to-end tests of real payments,
and what they wait for: a condition in its database, the API to take an intent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from tests.support import daemon_env, start_daemon, wait_exit

from intentd.adapters.postgres import Pool
from intentd.settings import Settings


async def wait_until(pool: Pool, query: str, *args: Any, timeout: float, what: str) -> None:
    """Until ``query`` (with ``args``) is true, or fail after ``timeout`` seconds naming
    ``what`` and listing the actions not yet settled."""
    deadline = time.monotonic() + timeout
    while not await pool.fetchval(query, *args):
        if time.monotonic() > deadline:
            open_actions = await pool.fetch(
                "SELECT id, intent_id, kind, reason, chain, token, amount, status, attempts,"
                " last_error FROM actions WHERE status NOT IN ('confirmed', 'cancelled')"
            )
            raise AssertionError(f"timed out waiting for {what}; open actions: {open_actions}")
        await asyncio.sleep(0.3)


@asynccontextmanager
async def running_on_chains(
    settings: Settings, pool: Pool, log: Path, **env: str
) -> AsyncIterator[dict[str, str]]:
    """``intentd run`` on ``settings``' resources, one confirmation on each chain,
    ``env`` added; its environment, once both pollers have a cursor. On exit it is
    stopped and must exit 0 (its log is ``log``)."""
    full = daemon_env(
        settings,
        INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
        **env,
    )
    daemon = start_daemon(["run"], full, log)
    try:
        await wait_until(
            pool, "SELECT count(*) = 2 FROM chain_cursors", timeout=60, what="both pollers"
        )
        yield full
    finally:
        daemon.terminate()
        code = await wait_exit(daemon, 60)
    assert code == 0, log.read_text()[-5000:]


async def create_intent(http: aiohttp.ClientSession, api: str, body: Any) -> dict[str, Any]:
    """``POST {api}/intents`` with ``body``: the record (201), retried while the API is
    not listening yet (it starts with the other roles)."""
    for _ in range(100):
        try:
            async with http.post(f"{api}/intents", json=body) as response:
                assert response.status == 201, await response.text()
                record: dict[str, Any] = await response.json()
                return record
        except aiohttp.ClientConnectionError:
            await asyncio.sleep(0.3)
    raise AssertionError("the API did not start")
