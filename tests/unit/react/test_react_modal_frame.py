"""@intentd/react's hooks and modal in a real browser (Debian's chromium under
Playwright), built from the packed package against React 18 and 19, with a fake
merchant and a fake intentd served by the test (``page.route``), so that every session
request and every message of the checkout frame is the test's to make:

- the session is asked for once on mount and shown at once; a used or stale session is
  replaced before a payment; "Start again" asks for a new one; a slow older answer is
  dropped; the browser's clock offset is corrected;
- the frame gets the token, the page's origin, the excluded chains and the styles in
  its fragment, on intentd's origin (a path prefix kept);
- the frame's success, close, cancel and error reach onSuccess (once, with
  transactionHash), onCancel, onError; Escape cancels; messages from the page itself or
  from other frames (of intentd's origin too) are ignored;
- a session endpoint that fails reaches onError when the payer asked to pay.

The real checkout and intentd are tested end to end in tests/e2e/test_react_modal.py.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.async_api import Browser, Frame, Page, Request, Route, async_playwright
from tests.react_package import ROOT, bundle, packed_once

CHROMIUM = shutil.which("chromium")
SHOP = "http://shop.test"
INTENTD = "http://intentd.test"
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>probe</title>
<script type="module" src="/probe.js"></script></head><body><div id="root"></div></body></html>"""
CHECKOUT = """<!doctype html><html><body><p>fake checkout</p><script>
const origin = new URLSearchParams(location.hash.slice(1)).get('origin');
window.send = (event, detail = {}) =>
  parent.postMessage({ type: 'intentd-pay', event, ...detail }, origin);
</script></body></html>"""
FOREIGN = """<!doctype html><html><body><script>
parent.postMessage({ type: 'intentd-pay', event: 'success', intent: { id: 666 } }, '*');
parent.postMessage({ type: 'intentd-pay', event: 'cancel' }, '*');
</script></body></html>"""
INTENT = {"id": 5, "intent_status": "COMPLETED", "tx_hash": "0xabc", "amount_received": "3"}


@dataclass
class Shop:
    """The fake merchant's session endpoint: counts calls; answers as told."""

    calls: list[str] = field(default_factory=list)
    answer: Callable[[int], tuple[int, dict[str, Any], datetime]] | None = None
    hold: dict[int, asyncio.Event] = field(default_factory=dict)

    def default(self, n: int) -> tuple[int, dict[str, Any], datetime]:
        now = datetime.now(UTC)
        end = (now + timedelta(seconds=900)).isoformat().replace("+00:00", "Z")
        return 200, {"session_token": f"itd_sess_{n}", "amount": "3", "expires_at": end}, now

    async def serve(self, route: Route, request: Request) -> None:
        self.calls.append(f"{request.method} {request.headers.get('accept')}")
        n = len(self.calls)
        if n in self.hold:
            await self.hold[n].wait()
        status, body, date = (self.answer or self.default)(n)
        await route.fulfill(
            status=status,
            body=json.dumps(body),
            headers={"content-type": "application/json", "date": format_datetime(date, True)},
        )


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The probe page's script, built from the packed package against React 18 and 19."""
    where = tmp_path_factory.mktemp("react-probe")
    packed = packed_once(tmp_path_factory)
    built = {}
    for react in ("18", "19"):
        out = where / react / "probe.js"
        figures = bundle(packed, ROOT / "tests/react/harness.tsx", out, react=react)
        assert figures["react"].startswith(f"{react}.")
        built[react] = out.read_bytes()
    return built


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    if CHROMIUM is None:
        pytest.fail("chromium is missing: run `make ops-tools`", pytrace=False)
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield launched
        finally:
            await launched.close()


@dataclass
class Probe:
    page: Page
    shop: Shop
    errors: list[str]

    async def state(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(await self.page.locator("#state").inner_text())
        return found

    async def until(self, script: str, arg: Any = None) -> None:
        await self.page.wait_for_function(script, arg=arg, timeout=10_000)

    async def events(self) -> list[list[Any]]:
        found: list[list[Any]] = await self.page.evaluate("window.events")
        return found

    async def frame(self, path: str = "/pay/checkout", old: Frame | None = None) -> Frame:
        deadline = time.monotonic() + 10
        while True:
            for frame in self.page.frames:
                shown = frame.url.startswith(INTENTD + path) and not frame.is_detached()
                if shown and frame is not old:
                    return frame
            assert time.monotonic() < deadline, [f.url for f in self.page.frames]
            await asyncio.sleep(0.02)

    async def no_frame(self) -> None:
        deadline = time.monotonic() + 10
        shown = (f for f in self.page.frames if not f.is_detached())
        while any(f.url.startswith(INTENTD) and "/pay/checkout" in f.url for f in shown):
            assert time.monotonic() < deadline, "the modal did not close"
            await asyncio.sleep(0.02)


def fragment(frame: Frame) -> dict[str, str]:
    parts = urlsplit(frame.url)
    assert parts.query == ""  # nothing in the query: servers never see the token
    return {k: v[0] for k, v in parse_qs(parts.fragment).items()}


@pytest.fixture(params=["18", "19"])
async def probe(
    request: pytest.FixtureRequest, browser: Browser, probes: dict[str, bytes]
) -> AsyncIterator[Probe]:
    context = await browser.new_context()
    page = await context.new_page()
    shop = Shop()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    async def serve(route: Route, req: Request) -> None:
        url = urlsplit(req.url)
        where = f"{url.scheme}://{url.netloc}"
        if where == SHOP and url.path == "/session":
            await shop.serve(route, req)
        elif where == SHOP and url.path in ("/", "/probe.js"):
            html = url.path == "/"
            body = PAGE.encode() if html else probes[request.param]
            kind = "text/html" if html else "text/javascript"
            await route.fulfill(body=body, headers={"content-type": kind})
        elif where == INTENTD and url.path.endswith("/pay/checkout"):
            await route.fulfill(body=CHECKOUT, headers={"content-type": "text/html"})
        elif url.path == "/foreign":
            await route.fulfill(body=FOREIGN, headers={"content-type": "text/html"})
        else:
            await route.fulfill(status=404, body="not found")

    await context.route("**/*", serve)
    await page.goto(SHOP + "/")
    probe = Probe(page, shop, errors)
    await probe.until("document.getElementById('state').textContent.includes('itd_sess_1')")
    try:
        yield probe
    finally:
        await context.close()
    assert errors == []


async def test_a_session_is_shown_used_once_and_its_callbacks_fire(probe: Probe) -> None:
    assert probe.shop.calls == ["GET application/json"]  # asked on mount, GET by default
    await probe.page.get_by_role("button", name="Pay by session").click()
    frame = await probe.frame()
    assert probe.shop.calls == ["GET application/json"]  # the first open uses it at once
    assert fragment(frame) == {
        "session": "itd_sess_1",
        "embed": "1",
        "origin": SHOP,
        "exclude": "BASE_TESTNET",
        "theme": "dark",
        "accent": "#6d28d9",
    }
    success = f"send('success', {{ intent: {json.dumps(INTENT)} }})"
    await frame.evaluate(success)
    await frame.evaluate(success)  # told twice, called once
    await frame.evaluate("send('close')")
    await probe.no_frame()
    assert await probe.events() == [["success", {**INTENT, "transactionHash": "0xabc"}]]
    assert (await probe.state())["open"] is False

    await probe.page.get_by_role("button", name="Pay by session").click()
    frame = await probe.frame(old=frame)
    assert fragment(frame)["session"] == "itd_sess_2"  # a used session is not offered again
    await frame.evaluate("send('error', { error: { code: 'network', message: 'offline' } })")
    await probe.until("window.events.length === 2")
    await probe.page.keyboard.press("Escape")
    await probe.no_frame()
    offline = {"code": "network", "message": "offline"}
    assert (await probe.events())[1:] == [["error", offline], ["cancel"]]

    await probe.page.get_by_role("button", name="Pay by session").click()
    frame = await probe.frame(old=frame)
    await frame.evaluate("send('cancel')")
    await probe.no_frame()
    assert (await probe.events())[-1] == ["cancel"]
    assert len(probe.shop.calls) == 3


async def test_messages_from_anywhere_but_the_frame_are_ignored(probe: Probe) -> None:
    await probe.page.evaluate(
        "window.seen = []; addEventListener('message', (e) => window.seen.push(e.origin))"
    )
    await probe.page.get_by_role("button", name="Pay by session").click()
    frame = await probe.frame()
    await probe.page.evaluate(
        """(intentd) => {
          postMessage({ type: 'intentd-pay', event: 'success', intent: { id: 1 } }, '*');
          for (const src of [intentd + '/foreign', 'http://other.test/foreign']) {
            const other = document.createElement('iframe');
            other.src = src;
            document.body.append(other);
          }
        }""",
        INTENTD,
    )
    await probe.until("window.seen.length >= 5")  # the page's own, two from each frame
    assert await probe.events() == []
    assert not frame.is_detached()  # their "cancel" closed nothing
    await frame.evaluate("send('cancel')")
    await probe.no_frame()
    assert await probe.events() == [["cancel"]]


async def test_stale_sessions_are_replaced_and_start_again_asks_for_a_new_one(
    probe: Probe,
) -> None:
    now = datetime.now(UTC)

    def answers(n: int) -> tuple[int, dict[str, Any], datetime]:
        # 2: ended already; 3: the server's clock an hour behind the browser's, with 15
        # minutes left by it (fresh); 4, 5: fresh
        ends = {2: now - timedelta(seconds=1), 3: now + timedelta(seconds=900 - 3600)}
        end = ends.get(n, now + timedelta(seconds=900))
        date = now - timedelta(seconds=3600) if n == 3 else now
        iso = end.isoformat().replace("+00:00", "Z")
        return 200, {"sessionToken": f"itd_sess_{n}", "expiresAt": iso}, date

    probe.shop.answer = answers
    await probe.page.get_by_role("button", name="Pay by session").click()
    frame = await probe.frame()
    await frame.evaluate("send('restart')")  # "Start again": session 2 (ended)
    frame = await probe.frame(old=frame)
    assert fragment(frame)["session"] == "itd_sess_2"
    await frame.evaluate("send('cancel')")
    await probe.no_frame()
    await probe.page.get_by_role("button", name="Pay by session").click()  # 2 is stale: 3
    frame = await probe.frame(old=frame)
    assert fragment(frame)["session"] == "itd_sess_3"
    assert len(probe.shop.calls) == 3

    # a slow answer to an older request is dropped: the newer one's session is shown
    probe.shop.hold[4] = asyncio.Event()
    await frame.evaluate("send('restart')")
    await probe.until("JSON.parse(document.getElementById('state').textContent).pending")
    await frame.evaluate("send('restart')")
    frame = await probe.frame(old=frame)
    assert fragment(frame)["session"] == "itd_sess_5"
    probe.shop.hold[4].set()
    deadline = time.monotonic() + 5
    while len(probe.shop.calls) < 5 or (await probe.state())["token"] != "itd_sess_5":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    await probe.page.evaluate("new Promise((done) => setTimeout(done, 0))")  # a turn for 4
    assert (await probe.state())["token"] == "itd_sess_5"
    assert fragment(await probe.frame())["session"] == "itd_sess_5"


async def test_a_failing_session_endpoint_reaches_on_error_when_the_payer_asks(
    probe: Probe,
) -> None:
    probe.shop.answer = lambda n: (500, {"error": "down"}, datetime.now(UTC))
    await probe.page.get_by_role("button", name="Pay by session").click()  # the mount's
    await (await probe.frame()).evaluate("send('cancel')")
    await probe.no_frame()
    await probe.page.get_by_role("button", name="Pay by session").click()  # a new one: 500
    await probe.until("window.events.length === 2")
    failed = "the session endpoint answered HTTP 500"
    assert await probe.events() == [
        ["cancel"],
        ["error", {"code": "session_unavailable", "message": failed}],
    ]
    state = await probe.state()
    assert (state["open"], state["token"], state["error"]) == (False, None, failed)
    await probe.no_frame()
    probe.shop.answer = lambda n: (200, {"no_token": True}, datetime.now(UTC))
    await probe.page.get_by_role("button", name="Pay by session").click()
    await probe.until("window.events.length === 3")
    no_token = "the session endpoint answered no session_token"
    assert (await probe.events())[2][1]["message"] == no_token
    assert len(probe.shop.calls) == 3


async def test_a_token_modal_without_a_session_endpoint(probe: Probe) -> None:
    await probe.page.get_by_role("button", name="Pay by token").click()
    frame = await probe.frame("/sub/pay/checkout")
    found = fragment(frame)
    assert (found["session"], found["origin"]) == ("itd_sess_fixed", SHOP)
    assert "exclude" not in found and "theme" not in found
    assert await probe.page.locator("[aria-label=Checkout]").count() == 1  # the dialog's name
    await frame.evaluate("send('restart')")  # no endpoint to ask: closed, and said why
    await probe.no_frame()
    ended = "the session has ended; give the modal a new one"
    assert await probe.events() == [["modal-error", {"code": "session_expired", "message": ended}]]
    assert (await probe.state())["modalOpen"] is False
    await probe.page.get_by_role("button", name="Pay by token").click()
    frame = await probe.frame("/sub/pay/checkout", old=frame)
    await frame.evaluate("send('cancel')")
    await probe.no_frame()
    assert (await probe.events())[-1] == ["modal-cancel"]
