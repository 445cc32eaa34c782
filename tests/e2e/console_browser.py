"""The console's browser tests' stack: ``intentd run`` on a database and topics of its
own with the console on, a client with a test API key and one user of each role made
with ``intentd users create``, a webhook receiver whose answers the test chooses, and
Debian's chromium under Playwright; helpers to sign in and take screenshots."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import secrets
import shutil
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from eth_account import Account
from eth_account.hdaccount import Language, generate_mnemonic
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect
from tests.conftest import ROOT, _drop_database, _fresh_database, new_topic_prefix
from tests.support import daemon_env, start_daemon, wait_exit
from tests.support import run_cli as cli

from intentd.adapters.postgres import Pool, create_pool
from intentd.settings import Settings

CHROMIUM = shutil.which("chromium")
SCREENS = Path(os.environ.get("INTENTD_SCREENSHOTS", ROOT / ".screens" / "console"))
PASSWORD = "a long console passphrase"
ROLES = ("owner", "admin", "developer", "support", "viewer")
EXPLORER = "https://sepolia.basescan.test"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Hooks:
    """A webhook receiver: answers ``status`` to every delivery, records them."""

    url: str = ""
    status: int = 500
    received: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Stack:
    api: str
    key: str
    links: dict[str, str]
    emails: dict[str, str]
    infra: dict[str, str]
    payer_key: str
    payer: str
    browser: Browser
    pool: Pool
    http: aiohttp.ClientSession
    hooks: Hooks
    env: dict[str, str]
    settings: Settings

    def console(self, path: str = "", mode: str = "test") -> str:
        return f"{self.api}/console{path}?mode={mode}"


async def _receiver(hooks: Hooks) -> web.AppRunner:
    async def receive(request: web.Request) -> web.Response:
        hooks.received.append({"status": hooks.status, "body": await request.text()})
        return web.Response(status=hooks.status, text=f"answered {hooks.status}")

    app = web.Application()
    app.router.add_post("/hooks", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    hooks.url = f"http://127.0.0.1:{port}/hooks"
    return runner


@pytest.fixture(scope="module")
async def stack(
    infra: dict[str, str], make_settings: Callable[..., Settings], tmp_path_factory: Any
) -> AsyncIterator[Stack]:
    if CHROMIUM is None:
        pytest.fail("chromium is missing: run `make ops-tools`", pytrace=False)
    name, url = await _fresh_database(infra)
    prefix = new_topic_prefix(infra)
    settings = make_settings(
        hd_mnemonic=generate_mnemonic(12, Language.ENGLISH),
        database={"url": url},
        kafka={
            "bootstrap_servers": infra["INTENTD_KAFKA_BOOTSTRAP"],
            "topic_prefix": prefix,
            "lifecycle_group": f"{prefix}-lifecycle",
        },
    )
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    env = daemon_env(
        settings,
        INTENTD__API__PORT=str(port),
        INTENTD_WEBHOOK_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
        INTENTD_CONSOLE_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
        INTENTD__CONSOLE__SECURE_COOKIES="false",
        INTENTD__CONSOLE__PUBLIC_URL=api,
        INTENTD__WEBHOOKS__ALLOW_PRIVATE_TARGETS="true",
        INTENTD__INTENTS__MIN_EXPIRES_IN="10",
        INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__BASE_TESTNET__EXPLORER_URL=EXPLORER,
    )
    env.pop("INTENTD_CRASH_AT", None)
    log = tmp_path_factory.mktemp("console") / "daemon.log"
    daemon = start_daemon(["run"], env, log)
    pool = await create_pool(url, max_size=2)
    hooks = Hooks()
    runner = await _receiver(hooks)
    try:
        async with aiohttp.ClientSession() as http:
            deadline = time.monotonic() + 90
            while True:
                assert daemon.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                try:
                    async with http.get(f"{api}/console") as answer:
                        if answer.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.2)
            while await pool.fetchval("SELECT count(*) FROM chain_cursors") < len(settings.chains):
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                await asyncio.sleep(0.2)
            cli(env, "clients", "create", "acme-shop")
            key = cli(env, "keys", "create", "--client", "acme-shop", "--mode", "test")["api_key"]
            links, emails = {}, {}
            for role in ROLES:
                emails[role] = f"{role}@acme-shop.example"
                made = cli(
                    env,
                    "users",
                    "create",
                    "--client",
                    "acme-shop",
                    "--email",
                    emails[role],
                    "--role",
                    role,
                )
                links[role] = made["signin_link"]
            payer_key = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
            SCREENS.mkdir(parents=True, exist_ok=True)
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM)
                try:
                    yield Stack(
                        api=api,
                        key=key,
                        links=links,
                        emails=emails,
                        infra=infra,
                        payer_key=payer_key,
                        payer=Account.from_key(payer_key).address,
                        browser=browser,
                        pool=pool,
                        http=http,
                        hooks=hooks,
                        env=env,
                        settings=settings,
                    )
                finally:
                    await browser.close()
    finally:
        await runner.cleanup()
        await pool.close()
        daemon.terminate()
        code = await wait_exit(daemon, 30)
        await _drop_database(infra, name)
    assert code == 0, log.read_text()[-5000:]


async def new_page(stack: Stack, width: int = 1280, height: int = 900) -> Page:
    context: BrowserContext = await stack.browser.new_context(
        viewport={"width": width, "height": height}, accept_downloads=True
    )
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda m: (
            errors.append(m.text)
            if m.type == "error" and "status of 40" not in m.text and "status of 50" not in m.text
            else None
        ),
    )
    page.errors = errors  # type: ignore[attr-defined]
    return page


async def sign_in(stack: Stack, role: str, page: Page | None = None, **size: int) -> Page:
    """A page signed in as the user of ``role`` (password :data:`PASSWORD`)."""
    page = page or await new_page(stack, **size)
    await page.goto(stack.console())
    await expect(page.get_by_role("heading", name="Sign in to the console")).to_be_visible()
    await page.get_by_label("Email").fill(stack.emails[role])
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    return page


async def use_link(stack: Stack, role: str) -> Page:
    """The user of ``role`` opens its sign-in link and chooses :data:`PASSWORD`."""
    page = await new_page(stack)
    await page.goto(stack.links[role])
    await expect(page.get_by_role("heading", name="Choose your password")).to_be_visible()
    assert "#link=" not in page.url  # the token left the address bar
    await page.get_by_label("New password").fill(PASSWORD)
    await page.get_by_label("Repeat the password").fill(PASSWORD)
    await page.get_by_role("button", name="Set password and sign in").click()
    await expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    return page


async def shot(page: Page, name: str, *, full: bool = True) -> None:
    await page.screenshot(path=str(SCREENS / f"{name}.png"), full_page=full)


async def api_call(stack: Stack, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    async with stack.http.request(
        method,
        f"{stack.api}/api/v1{path}",
        json=body,
        headers={"Authorization": f"Bearer {stack.key}"},
    ) as response:
        return response.status, await response.json(content_type=None)


def usdc(stack: Stack) -> str:
    return stack.infra["INTENTD_BASE_TESTNET_USDC"]


async def new_intent(stack: Stack, amount: str = "3", **extra: Any) -> dict[str, Any]:
    status, record = await api_call(
        stack,
        "POST",
        "/intents",
        {
            "amount": amount,
            "amountSymbol": "USDC",
            "tokenIn": usdc(stack),
            "source_chain": "BASE_TESTNET",
            "destination_chain": "ARBITRUM_TESTNET",
            "recipient": stack.payer,
            "refund_address": stack.payer,
            **extra,
        },
    )
    assert status == 201, record
    return dict(record)


async def until(check: Callable[[], Any], seconds: float = 60.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        found = await check()
        if found:
            return found
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.3)


def number(text: str) -> str:
    found = re.search(r"\d+", text)
    assert found is not None, text
    return found.group(0)
