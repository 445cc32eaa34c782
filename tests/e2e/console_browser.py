"""The console's browser tests' stack: ``intentd run`` on a database and topics of its
own with the console on, a client with a test API key and one user of each role made
with ``intentd users create`` (their sign-in links), and Debian's chromium under
Playwright (one daemon and one browser for the module).

Every test stands on its own: it takes a :class:`Shop` (a client of its own, with a
test key and one user of each role with :data:`PASSWORD`) and, if it needs one, a
webhook receiver of its own (:class:`Hooks`), so no test reads what another left,
whatever their order. Waits are deadlines, never fixed times: :data:`expect` polls up
to :data:`DEADLINE_MS` (a loaded machine is slow, not wrong), :func:`until` polls a
check to its deadline. Helpers to sign in and take screenshots."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from eth_account import Account
from playwright.async_api import Browser, Expect, Page
from tests.conftest import ROOT
from tests.e2e.browser_stack import chromium, running_daemon, watched_page
from tests.support import run_cli as cli

from intentd.access import passwords
from intentd.access.roles import Role
from intentd.adapters.postgres import Pool, api_keys, clients, console_users
from intentd.credentials import generate_key
from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port

SCREENS = Path(os.environ.get("INTENTD_SCREENSHOTS", ROOT / ".screens" / "console"))
PASSWORD = "a long console passphrase"
ROLES = ("owner", "admin", "developer", "support", "viewer")
EXPLORER = "https://sepolia.basescan.test"
DEADLINE_MS = 30_000
"""How long an expectation on the page may take to come true (it is polled)."""
expect = Expect()
expect.set_options(timeout=DEADLINE_MS)
_HASH: list[str] = []


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
    env: dict[str, str]
    settings: Settings

    def console(self, path: str = "", mode: str = "test") -> str:
        return f"{self.api}/console{path}?mode={mode}"


@dataclass
class Shop:
    """A client of one test's own: a test key, one user of each role."""

    name: str
    client_id: Any
    key: str
    emails: dict[str, str]


@pytest.fixture
async def shop(stack: Stack) -> Shop:
    """A new client with a test key and one user of each role (password
    :data:`PASSWORD`), written to the daemon's database (``intentd users create`` and its
    links are the first test's)."""
    if not _HASH:
        _HASH.append(await asyncio.to_thread(passwords.hash_password, PASSWORD))
    name = f"shop-{secrets.token_hex(4)}"
    async with stack.pool.acquire() as conn:
        client = await clients.create(conn, name)
        new = generate_key("test")
        await api_keys.insert_key(conn, new, client=client, mode="test", rate_limit=None)
        emails = {}
        for role in ROLES:
            emails[role] = f"{role}@{name}.example"
            user = await console_users.create(conn, client.id, emails[role], Role(role))
            await console_users.set_password(conn, user.id, _HASH[0])
    return Shop(name, client.id, new.key, emails)


@pytest.fixture
async def hooks() -> AsyncIterator[Hooks]:
    """A webhook receiver of the test's own."""
    found = Hooks()
    runner = await _receiver(found)
    try:
        yield found
    finally:
        await runner.cleanup()


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
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    async with (
        chromium() as browser,
        running_daemon(
            infra,
            make_settings,
            tmp_path_factory.mktemp("console") / "daemon.log",
            ready="/console",
            port=port,
            INTENTD_WEBHOOK_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
            INTENTD_CONSOLE_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
            INTENTD__CONSOLE__SECURE_COOKIES="false",
            INTENTD__CONSOLE__PUBLIC_URL=api,
            INTENTD__WEBHOOKS__ALLOW_PRIVATE_TARGETS="true",
            INTENTD__CHAINS__BASE_TESTNET__EXPLORER_URL=EXPLORER,
        ) as daemon,
    ):
        env = daemon.env
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
        yield Stack(
            api=api,
            key=key,
            links=links,
            emails=emails,
            infra=infra,
            payer_key=payer_key,
            payer=Account.from_key(payer_key).address,
            browser=browser,
            pool=daemon.pool,
            http=daemon.http,
            env=env,
            settings=daemon.settings,
        )


async def new_page(stack: Stack, width: int = 1280, height: int = 900) -> Page:
    return await watched_page(
        stack.browser, width, height, http_errors=False, accept_downloads=True
    )


async def sign_in(stack: Stack, email: str, page: Page | None = None, **size: int) -> Page:
    """A page signed in as ``email`` (password :data:`PASSWORD`)."""
    page = page or await new_page(stack, **size)
    await page.goto(stack.console())
    await expect(page.get_by_role("heading", name="Sign in to the console")).to_be_visible()
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    return page


async def use_link(stack: Stack, role: str) -> Page:
    """The user of ``role`` opens its sign-in link and chooses :data:`PASSWORD`."""
    page = await new_page(stack)
    await choose_password(page, stack.links[role])
    return page


async def choose_password(page: Page, link: str) -> None:
    """Open a sign-in ``link`` on ``page``, choose :data:`PASSWORD`, be signed in."""
    await page.goto(link)
    await expect(page.get_by_role("heading", name="Choose your password")).to_be_visible()
    assert "#link=" not in page.url  # the token left the address bar
    await page.get_by_label("New password").fill(PASSWORD)
    await page.get_by_label("Repeat the password").fill(PASSWORD)
    await page.get_by_role("button", name="Set password and sign in").click()
    await expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()


async def shot(page: Page, name: str, *, full: bool = True) -> None:
    await page.screenshot(path=str(SCREENS / f"{name}.png"), full_page=full)


async def api_call(
    stack: Stack, method: str, path: str, body: Any = None, *, key: str | None = None
) -> tuple[int, Any]:
    """``/api/v1`` with ``key`` (the first test's client's key by default)."""
    async with stack.http.request(
        method,
        f"{stack.api}/api/v1{path}",
        json=body,
        headers={"Authorization": f"Bearer {key or stack.key}"},
    ) as response:
        return response.status, await response.json(content_type=None)


def usdc(stack: Stack) -> str:
    return stack.infra["INTENTD_BASE_TESTNET_USDC"]


async def new_intent(
    stack: Stack, amount: str = "3", *, key: str | None = None, **extra: Any
) -> dict[str, Any]:
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
        key=key,
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
