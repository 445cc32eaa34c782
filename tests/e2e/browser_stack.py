"""What the browser tests' stacks share (tests/e2e/console_browser.py,
tests/e2e/modal_browser.py): ``intentd run`` on a database and topics of its own,
serving and following both chains before a test runs; Debian's chromium under
Playwright; pages that record their errors."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from playwright.async_api import Browser, Page, async_playwright
from tests.conftest import own_resources
from tests.support import daemon_env, start_daemon, until_serving, wait_exit

from intentd.adapters.postgres import Pool, create_pool
from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port

CHROMIUM = shutil.which("chromium")
READY_SECONDS = 90
"""How long ``intentd run`` may take to serve and to have a cursor on every chain."""


@dataclass
class Daemon:
    """``intentd run``, serving at ``api``; ``pool`` on its database."""

    api: str
    env: dict[str, str]
    settings: Settings
    pool: Pool
    http: aiohttp.ClientSession
    log: Path


@asynccontextmanager
async def running_daemon(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    log: Path,
    *,
    ready: str,
    port: int | None = None,
    **env: str,
) -> AsyncIterator[Daemon]:
    """``intentd run`` (one confirmation on each chain, intents of 10 s and more, the
    API on ``port`` or a free one, ``env`` added) on resources of its own, once
    ``ready`` (a path) answers 200 and every chain has a cursor. On exit it is
    stopped, must exit 0 (its log is ``log``), and its database is dropped."""
    port = port or free_port()
    api = f"http://127.0.0.1:{port}"
    async with own_resources(infra, make_settings) as settings:
        full = daemon_env(
            settings,
            INTENTD__API__PORT=str(port),
            INTENTD__INTENTS__MIN_EXPIRES_IN="10",
            INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",
            INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
            **env,
        )
        full.pop("INTENTD_CRASH_AT", None)
        daemon = start_daemon(["run"], full, log)
        pool = await create_pool(settings.database.url.get_secret_value(), max_size=2)
        try:
            async with aiohttp.ClientSession() as http:
                running = Daemon(api, full, settings, pool, http, log)
                await _until_ready(daemon, running, ready)
                yield running
        finally:
            await pool.close()
            daemon.terminate()
            code = await wait_exit(daemon, 30)
    assert code == 0, log.read_text()[-5000:]


async def _until_ready(process: Any, daemon: Daemon, ready: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    await until_serving(process, f"{daemon.api}{ready}", daemon.log, READY_SECONDS)
    chains = len(daemon.settings.chains)
    while await daemon.pool.fetchval("SELECT count(*) FROM chain_cursors") < chains:
        assert time.monotonic() < deadline, daemon.log.read_text()[-3000:]
        await asyncio.sleep(0.2)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Debian's chromium, launched by Playwright; a test fails at once without it."""
    if CHROMIUM is None:
        pytest.fail("chromium is missing: run `make ops-tools`", pytrace=False)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            await browser.close()


async def watched_page(
    browser: Browser, width: int, height: int, *, http_errors: bool, **context: Any
) -> Page:
    """A page in a new context (``context``: Playwright's options) whose ``errors``
    collect its uncaught errors and console errors; with ``http_errors`` also every
    response of 400 and above, else console errors about such a status are left out
    (a page that shows a failed request's answer on purpose logs them)."""
    opened = await browser.new_context(viewport={"width": width, "height": height}, **context)
    page = await opened.new_page()
    errors: list[str] = []

    def on_console(message: Any) -> None:
        about_status = "status of 40" in message.text or "status of 50" in message.text
        if message.type == "error" and (http_errors or not about_status):
            errors.append(message.text)

    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", on_console)
    if http_errors:
        page.on(
            "response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None
        )
    page.errors = errors  # type: ignore[attr-defined]
    return page
