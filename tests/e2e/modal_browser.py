"""The browser tests' stack: ``intentd run`` on a database and topics of its own, the
demo shop (``intentd_dev.modal_demo``) in this process, Debian's chromium under Playwright;
and helpers to find the modal's frame, decode the QR code drawn, take screenshots."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import zxingcpp
from aiohttp import web
from eth_account import Account
from eth_account.hdaccount import Language, generate_mnemonic
from playwright.async_api import Browser, Frame, Page, async_playwright
from tests.conftest import _drop_database, _fresh_database, new_topic_prefix
from tests.support import daemon_env, start_daemon, wait_exit
from tests.support import run_cli as cli

from intentd.adapters.postgres import Pool, create_pool
from intentd.settings import Settings
from intentd_dev.modal_demo.merchant import Shop, merchant_app

CHROMIUM = shutil.which("chromium")
SCREENS = Path(
    os.environ.get("INTENTD_SCREENSHOTS", Path(tempfile.gettempdir()) / "intentd-modal-screens")
)
USDC = 10**6


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Stack:
    api: str
    shop: str
    payer: str
    payer_key: str
    key: str
    infra: dict[str, str]
    browser: Browser
    pool: Pool
    http: aiohttp.ClientSession


@pytest.fixture(scope="module")
async def stack(
    request: pytest.FixtureRequest,
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    tmp_path_factory: Any,
) -> AsyncIterator[Stack]:
    """``intentd run`` on a database and topics of its own, the demo shop, a browser. The
    shop serves the React pages of a module's ``react_pages`` fixture, if it has one
    (name to the folder of a build's ``shop.js``, tests/e2e/test_react_modal.py)."""
    try:
        react_pages: dict[str, Path] = request.getfixturevalue("react_pages")
    except pytest.FixtureLookupError:
        react_pages = {}
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
    env = daemon_env(
        settings,
        INTENTD__API__PORT=str(port),
        INTENTD_SESSION_SECRET=secrets.token_urlsafe(32),
        INTENTD__INTENTS__MIN_EXPIRES_IN="10",
        INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
    )
    log = tmp_path_factory.mktemp("modal") / "daemon.log"
    daemon = start_daemon(["run"], env, log)
    pool = await create_pool(url, max_size=2)
    api = f"http://127.0.0.1:{port}"
    runner: web.AppRunner | None = None
    try:
        async with aiohttp.ClientSession() as http:
            deadline = time.monotonic() + 60
            while True:
                assert daemon.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                try:
                    async with http.get(f"{api}/pay/config.json") as answer:
                        if answer.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.2)
            while await pool.fetchval("SELECT count(*) FROM chain_cursors") < len(settings.chains):
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                await asyncio.sleep(0.2)
            cli(env, "clients", "create", "demo-shop", "--exist-ok")
            key = cli(env, "keys", "create", "--client", "demo-shop", "--mode", "test")["api_key"]
            payer_key = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
            shop = Shop(settings=settings, api_url=api, api_key=key, payer_key=payer_key)
            runner = web.AppRunner(merchant_app(shop, react_pages))
            await runner.setup()
            shop_port = free_port()
            await web.TCPSite(runner, "127.0.0.1", shop_port).start()
            SCREENS.mkdir(parents=True, exist_ok=True)
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM)
                try:
                    yield Stack(
                        api=api,
                        shop=f"http://127.0.0.1:{shop_port}",
                        payer=Account.from_key(payer_key).address,
                        payer_key=payer_key,
                        key=key,
                        infra=infra,
                        browser=browser,
                        pool=pool,
                        http=http,
                    )
                finally:
                    await browser.close()
    finally:
        if runner is not None:
            await runner.cleanup()
        await pool.close()
        daemon.terminate()
        code = await wait_exit(daemon, 30)
        await _drop_database(infra, name)
    assert code == 0, log.read_text()[-5000:]


async def new_page(stack: Stack, width: int = 1280, height: int = 900) -> Page:
    context = await stack.browser.new_context(
        viewport={"width": width, "height": height},
        permissions=["clipboard-read", "clipboard-write"],
    )
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.errors = errors  # type: ignore[attr-defined]
    return page


async def checkout_frame(page: Page, old: Frame | None = None) -> Frame:
    """The modal's frame (inside a closed shadow root, so found among the page's frames)."""
    deadline = time.monotonic() + 15
    while True:
        for frame in page.frames:
            if "/pay/checkout" in frame.url and frame is not old and not frame.is_detached():
                return frame
        assert time.monotonic() < deadline, [f.url for f in page.frames]
        await asyncio.sleep(0.05)


async def modal_closed(page: Page) -> None:
    """Wait until the modal's frame is gone (``page.locator`` cannot see into the
    modal's closed shadow root, so the page's frames are watched instead)."""
    deadline = time.monotonic() + 10
    while any("/pay/checkout" in f.url and not f.is_detached() for f in page.frames):
        assert time.monotonic() < deadline, "the modal did not close"
        await asyncio.sleep(0.05)


async def shot(target: Page, name: str) -> None:
    await target.screenshot(path=str(SCREENS / f"{name}.png"))


def qr_text(path_d: str) -> str:
    """Decode the QR code the page drew: its SVG path of 1x1 squares, with zxing-cpp."""
    cells = [(int(x), int(y)) for x, y in re.findall(r"M(\d+) (\d+)h1v1h-1z", path_d)]
    extent = max(max(c) for c in cells) + 5
    scale = 4
    width = extent * scale
    pixels = bytearray(b"\xff") * (width * width)
    for x, y in cells:
        for dy in range(scale):
            start = (y * scale + dy) * width + x * scale
            pixels[start : start + scale] = b"\x00" * scale
    found = zxingcpp.read_barcode(memoryview(pixels).cast("B", (width, width)))
    assert found is not None
    return str(found.text)


async def choose(frame: Frame, option: str, refund: str) -> None:
    await frame.get_by_role("radio", name=option).check()
    await frame.get_by_label("Your wallet address (for refunds)").fill(refund)
    await frame.get_by_role("button", name="Continue").click()


async def deposit(frame: Frame) -> tuple[str, str]:
    address = await frame.locator("#deposit-address").inner_text()
    amount = (await frame.locator("#deposit-amount").inner_text()).split()[0]
    return address, amount


def units(amount: str, decimals: int) -> int:
    whole, _, fraction = amount.partition(".")
    return int(whole + fraction.ljust(decimals, "0"))
