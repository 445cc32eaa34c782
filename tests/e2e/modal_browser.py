"""The browser tests' stack: ``intentd run`` on a database and topics of its own, the
demo shop (``intentd_dev.modal_demo``) in this process, Debian's chromium under Playwright;
and helpers to find the modal's frame, decode the QR code drawn, take screenshots."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
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
from playwright.async_api import Browser, Frame, Page, expect
from tests.e2e.browser_stack import chromium, running_daemon, watched_page
from tests.support import run_cli as cli
from tests.support import send_payments

from intentd.adapters.postgres import Pool
from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port
from intentd_dev.modal_demo.merchant import Shop, merchant_app

SCREENS = Path(
    os.environ.get("INTENTD_SCREENSHOTS", Path(tempfile.gettempdir()) / "intentd-modal-screens")
)
USDC = 10**6


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
    shop_port = free_port()
    async with (
        chromium() as browser,
        running_daemon(
            infra,
            make_settings,
            tmp_path_factory.mktemp("modal") / "daemon.log",
            ready="/pay/config.json",
            # The shop's origin may frame the checkout (frame-ancestors; 'self' alone otherwise).
            INTENTD__API__CORS_ORIGINS=f'["http://127.0.0.1:{shop_port}"]',
            INTENTD_SESSION_SECRET=secrets.token_urlsafe(32),
        ) as daemon,
    ):
        env = daemon.env
        cli(env, "clients", "create", "demo-shop", "--exist-ok")
        key = cli(env, "keys", "create", "--client", "demo-shop", "--mode", "test")["api_key"]
        payer_key = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
        shop = Shop(settings=daemon.settings, api_url=daemon.api, api_key=key, payer_key=payer_key)
        runner = web.AppRunner(merchant_app(shop, react_pages))
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", shop_port).start()
            SCREENS.mkdir(parents=True, exist_ok=True)
            yield Stack(
                api=daemon.api,
                shop=f"http://127.0.0.1:{shop_port}",
                payer=Account.from_key(payer_key).address,
                payer_key=payer_key,
                key=key,
                infra=infra,
                browser=browser,
                pool=daemon.pool,
                http=daemon.http,
            )
        finally:
            await runner.cleanup()


async def new_page(stack: Stack, width: int = 1280, height: int = 900) -> Page:
    return await watched_page(
        stack.browser,
        width,
        height,
        http_errors=True,
        permissions=["clipboard-read", "clipboard-write"],
    )


async def checkout_frame(page: Page, old: Frame | None = None) -> Frame:
    """The modal's frame (inside a closed shadow root, so found among the page's frames)."""
    deadline = time.monotonic() + 15
    while True:
        for frame in page.frames:
            if "/pay/checkout" in frame.url and frame is not old and not frame.is_detached():
                return frame
        assert time.monotonic() < deadline, [f.url for f in page.frames]
        await asyncio.sleep(0.05)


async def buy_a_coffee(page: Page) -> tuple[Frame, float]:
    """Click the shop's "Buy a coffee: 3 USDC" and wait for the modal's payment options:
    its frame, and the seconds from the click to the options shown (interactive)."""
    started = time.monotonic()
    await page.get_by_role("button", name="Buy a coffee: 3 USDC").click()
    frame = await checkout_frame(page)
    await expect(frame.get_by_role("heading", name="Pay 3 USDC")).to_be_visible()
    await expect(frame.get_by_role("radio").first).to_be_visible()
    return frame, time.monotonic() - started


async def pay_in_two_parts(
    stack: Stack, page: Page, frame: Frame, address: str, total: int, *, partial: str
) -> None:
    """The payer sends 1 USDC of ``total`` (base units) on Base Testnet to ``address``:
    the modal says what is missing (screenshot ``partial``); then the rest: it says the
    payment is complete."""
    usdc = stack.infra["INTENTD_BASE_TESTNET_USDC"]
    rpc = stack.infra["INTENTD_BASE_TESTNET_RPC_URL"]
    await asyncio.to_thread(send_payments, rpc, stack.payer_key, [(usdc, address, USDC)])
    missing = f"{(total - USDC) / USDC:g}"
    await expect(frame.get_by_role("status")).to_have_text(
        f"Received 1 USDC. Still missing: {missing} USDC.", timeout=30_000
    )
    await shot(page, partial)
    await asyncio.to_thread(send_payments, rpc, stack.payer_key, [(usdc, address, total - USDC)])
    await expect(frame.get_by_role("heading", name="Payment complete")).to_be_visible(
        timeout=90_000
    )


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
