"""``make demo`` as its merchant sees it, on resources of this test alone: the demo runs
with ``--stay``, its owner opens the sign-in link it printed in Debian's chromium,
finds the demo's three payments (USDC topped up, native ETH overpaid, USDC paid in part
and expired), and the Reports page says "Reconciled" for them; Ctrl-C ends the demo.
Screenshots go to $INTENTD_SCREENSHOTS (default: .screens/console, ignored by git)."""

from __future__ import annotations

import asyncio
import re
import signal
import time
from pathlib import Path

import pytest
from tests.e2e.browser_stack import chromium
from tests.e2e.console_browser import SCREENS, choose_password, expect
from tests.e2e.demo_process import start_demo

from intentd.adapters.postgres import Pool
from intentd.settings import Settings

pytestmark = pytest.mark.e2e


async def printed_link(demo: asyncio.subprocess.Process, seen: list[str], seconds: float) -> str:
    """The sign-in link the demo prints once its payments went through, read line by line
    to a deadline."""
    assert demo.stdout is not None
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        assert left > 0, "".join(seen)
        line = (await asyncio.wait_for(demo.stdout.readline(), left)).decode()
        assert line, "".join(seen)  # the demo ended before printing it
        seen.append(line)
        found = re.search(r"(http://\S+/console/signin#link=\S+)", line)
        if found is not None:
            return found.group(1)


@pytest.mark.timeout(360)
async def test_the_demos_owner_finds_its_payments_reconciled(
    own_stack: tuple[Settings, Pool], tmp_path: Path
) -> None:
    settings, _ = own_stack
    log = tmp_path / "daemon.log"
    demo = await start_demo(settings, log, "--stay")
    seen: list[str] = []
    try:
        link = await printed_link(demo, seen, 280)
        SCREENS.mkdir(parents=True, exist_ok=True)
        async with chromium() as browser:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            await choose_password(page, link)
            nav = page.get_by_role("navigation")
            await nav.get_by_role("link", name="Payments").click()
            await expect(page.locator("tbody tr")).to_have_count(3)
            await nav.get_by_role("link", name="Reports").click()
            verdict = page.locator(".verdict")
            await expect(verdict).to_have_text(re.compile(r"^Reconciled\. 3 payment\(s\) ended"))
            await expect(page.get_by_text("No mismatch.")).to_be_visible()
            await page.screenshot(path=str(SCREENS / "20-demo-reports.png"), full_page=True)
    finally:
        if demo.returncode is None:
            demo.send_signal(signal.SIGINT)  # Ctrl-C
        rest, _ = await asyncio.wait_for(demo.communicate(), 60)
        seen.append(rest.decode())
    daemon_log = log.read_text() if log.exists() else ""
    assert demo.returncode == 0, "".join(seen) + daemon_log[-5000:]
