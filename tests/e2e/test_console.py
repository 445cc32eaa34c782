"""The merchant console in a real browser (Debian's chromium under Playwright) against
``intentd run`` on the anvil chains, one browser and one daemon for the module: users
set their passwords from the links ``intentd users create`` printed; payments made
with real transactions show on every page; sign-in with and without the second
factor; support refunds below the threshold; an admin's refund above it waits until
an owner approves; a viewer is refused every change, and reads the reports; an export
downloads and its rows equal the API's, and the reconciliation of the payments says
"Reconciled"; CSRF and session fixation fail; a failing webhook endpoint shows its
attempts and is recovered from the page; a disabled user's session dies.

Each test stands on its own (a client of its own, ``shop``; a webhook receiver of its
own, ``hooks``) and waits with deadlines (``console_browser.expect``, ``until``), so
any one runs alone, in any order, on a loaded machine. Screenshots of each page
(desktop and phone width) go to $INTENTD_SCREENSHOTS (default: .screens/console,
ignored by git)."""

from __future__ import annotations

import asyncio
import csv
import io
import re
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest
from aiohttp import web
from playwright.async_api import Page
from tests.e2e.console_browser import (
    EXPLORER,
    PASSWORD,
    Hooks,
    Shop,
    Stack,
    api_call,
    expect,
    free_port,
    hooks,
    new_intent,
    new_page,
    shop,
    shot,
    sign_in,
    stack,
    until,
    usdc,
    use_link,
)
from tests.e2e.modal_browser import qr_text
from tests.support import send_payments

pytestmark = pytest.mark.e2e
__all__ = ["hooks", "shop", "stack"]
USDC = 10**6
PHONE = {"width": 390, "height": 844}


async def pay(stack: Stack, record: dict[str, Any], amount: int) -> None:
    rpc = stack.infra["INTENTD_BASE_TESTNET_RPC_URL"]
    await asyncio.to_thread(
        send_payments, rpc, stack.payer_key, [(usdc(stack), record["intent_address"], amount)]
    )


async def status_of(stack: Stack, intent_id: int, key: str | None = None) -> str:
    status, record = await api_call(stack, "GET", f"/intents/{intent_id}", key=key)
    assert status == 200, record
    return str(record["intent_status"])


async def received(stack: Stack, intent_id: int, amount: str, key: str | None = None) -> bool:
    status, record = await api_call(stack, "GET", f"/intents/{intent_id}", key=key)
    return status == 200 and bool(record["amount_received"] == amount)


async def _is(stack: Stack, intent_id: int, status: str, key: str | None = None) -> bool:
    return await status_of(stack, intent_id, key) == status


async def open_payment(page: Page, stack: Stack, intent_id: int) -> None:
    await page.goto(stack.console(f"/payments/{intent_id}"))
    await expect(
        page.get_by_role("heading", name=re.compile(f"^Payment {intent_id}"))
    ).to_be_visible()


async def set_threshold(stack: Stack, owner: Page, usd: str) -> None:
    """The owner sets the refund approval threshold on the Team page."""
    await owner.goto(stack.console("/team"))
    await owner.get_by_label("Threshold (USD)").fill(usd)
    await owner.get_by_role("button", name="Save").click()
    await expect(owner.get_by_text("Saved.")).to_be_visible()


async def part_paid(stack: Stack, shop: Shop, amount: str, paid: int) -> dict[str, Any]:
    """A new intent of ``shop`` with ``paid`` whole USDC received."""
    record = await new_intent(stack, amount, key=shop.key)
    await pay(stack, record, paid * USDC)
    await until(lambda: received(stack, record["id"], str(paid), shop.key), 60)
    return record


@pytest.mark.timeout(300)
async def test_users_set_their_passwords_and_every_page_shows_the_payments(stack: Stack) -> None:
    """The users ``intentd users create`` made (the stack's client) open their links."""
    done = await new_intent(stack, "3")
    partial = await new_intent(stack, "5")
    await new_intent(stack, "2")
    await pay(stack, done, int(float(done["total_amount_in_asset_token"]) * USDC))
    await pay(stack, partial, 1 * USDC)
    owner = await use_link(stack, "owner")
    for role in ("admin", "developer", "support", "viewer"):
        page = await use_link(stack, role)
        await page.context.close()
    await until(lambda: _is(stack, done["id"], "COMPLETED"), 120)
    await until(lambda: received(stack, partial["id"], "1"), 60)

    await owner.goto(stack.console())
    completed = owner.get_by_role("region", name="Completed today")
    await expect(completed.get_by_role("cell", name="BASE_TESTNET")).to_be_visible()
    await expect(owner.get_by_text("pending").first).to_be_visible()
    await shot(owner, "1-overview")

    await owner.goto(stack.console("/payments"))
    rows = owner.locator("tbody tr")
    await expect(rows).to_have_count(3)
    fresh = await new_intent(stack, "4")
    await expect(owner.get_by_role("link", name=f"#{fresh['id']}")).to_be_visible()
    await expect(rows).to_have_count(4)  # appeared without a reload
    await shot(owner, "2-payments")
    await owner.get_by_text("Filters").click()
    await owner.get_by_label("Status").select_option("COMPLETED")
    await owner.get_by_role("button", name="Apply").click()
    await expect(rows).to_have_count(1)
    await expect(owner.get_by_role("link", name=f"#{done['id']}")).to_be_visible()
    assert "status=COMPLETED" in owner.url

    await open_payment(owner, stack, partial["id"])
    why = owner.locator("#why")
    await expect(why).to_contain_text("Under-paid: 1 USDC received")
    deposit = owner.get_by_role("region", name="Deposits").get_by_role("link")
    assert (await deposit.get_attribute("href") or "").startswith(f"{EXPLORER}/tx/0x")
    await shot(owner, "3-payment-underpaid")

    await open_payment(owner, stack, done["id"])
    await expect(owner.locator("#why")).to_have_text("Nothing: this payment has ended.")
    timeline = owner.get_by_role("region", name="Timeline")
    await expect(timeline.get_by_role("cell", name="intent_completed")).to_be_visible()
    ours = owner.get_by_role("region", name="Our transactions")
    await expect(ours.get_by_role("cell", name="prefill").first).to_be_visible()  # a resend: two
    await expect(ours.get_by_role("cell", name=re.compile(r"^\d+$")).first).to_be_visible()  # gas
    await shot(owner, "4-payment-completed")

    phone = await sign_in(stack, stack.emails["owner"], **PHONE)
    for path, name in (
        ("", "overview"),
        ("/payments", "payments"),
        (f"/payments/{partial['id']}", "payment"),
    ):
        await phone.goto(stack.console(path))
        await phone.wait_for_load_state("networkidle")
        await shot(phone, f"5-phone-{name}")
        # no sideways scrolling of the page itself (wide tables scroll in their own box)
        assert await phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.context.close()
    assert owner.errors == []  # type: ignore[attr-defined]
    await owner.context.close()


async def _takes(step: int) -> bool:
    return step <= int(time.time()) // 30 + 1


async def sign_in_with_code(stack: Stack, email: str, secret: str, used: set[int]) -> Page:
    """Sign in with the password and a TOTP code of a time step not in ``used`` (a code
    is accepted once)."""
    page = await new_page(stack)
    await page.goto(stack.console())
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Second factor")).to_be_visible()
    step = int(time.time()) // 30
    while step in used:  # a code is accepted once: take the next step's
        step += 1
    await until(lambda: _takes(step), 40)  # ... once the server takes it (one step ahead)
    used.add(step)
    await page.get_by_label("Code", exact=True).fill(pyotp.TOTP(secret).at(step * 30))
    await page.get_by_role("button", name="Verify").click()
    await expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    return page


@pytest.mark.timeout(180)
async def test_sign_in_with_and_without_the_second_factor(stack: Stack, shop: Shop) -> None:
    email = shop.emails["admin"]
    admin = await sign_in(stack, email)  # without: the password alone
    await admin.goto(stack.console("/account"))
    await admin.get_by_role("button", name="Turn on").click()
    secret = (await admin.locator(".secret code").inner_text()).strip()
    await expect(
        admin.get_by_role("img", name="QR code of the authenticator setup")
    ).to_be_visible()
    drawn = qr_text(await admin.locator("svg.qr path").get_attribute("d") or "")
    label = email.replace("@", "%40")
    assert drawn == f"otpauth://totp/intentd%3A{label}?secret={secret}&issuer=intentd"
    await shot(admin, "6-account-totp-setup")
    step = int(time.time()) // 30
    used = {step}
    await admin.get_by_label("Code", exact=True).fill(pyotp.TOTP(secret).at(step * 30))
    await admin.get_by_role("button", name="Confirm").click()
    await expect(admin.locator("ul.codes li")).to_have_count(10)
    await admin.get_by_role("button", name="Sign out").click()
    await expect(admin.get_by_role("heading", name="Sign in to the console")).to_be_visible()
    await admin.context.close()
    with_code = await sign_in_with_code(stack, email, secret, used)
    await with_code.context.close()


@pytest.mark.timeout(240)
async def test_support_refunds_below_the_threshold(stack: Stack, shop: Shop) -> None:
    owner = await sign_in(stack, shop.emails["owner"])
    await set_threshold(stack, owner, "2")
    await shot(owner, "7-team")

    record = await part_paid(stack, shop, "5", 1)
    support = await sign_in(stack, shop.emails["support"])
    await open_payment(support, stack, record["id"])
    await support.get_by_role("button", name="Cancel payment").click()
    dialog = support.get_by_role("dialog")
    await expect(dialog).to_contain_text(f"1 USDC goes back to {stack.payer}")
    await expect(dialog).not_to_contain_text("approval")
    await shot(support, "8-cancel-confirmation")
    await dialog.get_by_role("button", name="Cancel payment").click()
    await expect(support.get_by_text("Payment cancelled.")).to_be_visible()
    await until(lambda: _is(stack, record["id"], "REFUNDED", shop.key), 120)
    await expect(support.get_by_role("heading", name=re.compile("refunded"))).to_be_visible()
    # the event log shows it (support reads events, not keys)
    await support.goto(stack.console("/developers"))
    events = support.get_by_role("region", name="Event log")
    await expect(events.get_by_role("cell", name="intent_refunded").first).to_be_visible()
    await expect(support.get_by_role("button", name="Create key")).to_have_count(0)
    await shot(support, "16-developers")
    await support.context.close()
    await owner.context.close()


@pytest.mark.timeout(240)
async def test_an_admins_refund_above_the_threshold_waits_until_an_owner_approves(
    stack: Stack, shop: Shop
) -> None:
    owner = await sign_in(stack, shop.emails["owner"])
    await set_threshold(stack, owner, "2")
    record = await part_paid(stack, shop, "5", 3)
    admin = await sign_in(stack, shop.emails["admin"])
    await open_payment(admin, stack, record["id"])
    await admin.get_by_role("button", name="Cancel payment").click()
    dialog = admin.get_by_role("dialog")
    await expect(dialog).to_contain_text("3 USDC goes back")
    await expect(dialog).to_contain_text("waits for another person\u2019s approval")
    await dialog.get_by_role("button", name="Cancel payment").click()
    await expect(
        admin.get_by_text("The refund waits for approval by another person.")
    ).to_be_visible()
    waiting = admin.get_by_role("region", name="Refund waiting for approval")
    await expect(admin.locator("#why")).to_contain_text("waits for another person\u2019s approval")
    await expect(admin.get_by_role("button", name="Approve")).to_have_count(0)  # not its own
    await shot(admin, "9-approval-waiting")
    assert await status_of(stack, record["id"], shop.key) == "PENDING"  # nothing refunded yet

    await owner.goto(stack.console("/approvals"))
    row = owner.get_by_role("row").filter(has_text=f"#{record['id']}")
    await expect(row).to_contain_text("3 USDC")
    await expect(row).to_contain_text(shop.emails["admin"])
    await shot(owner, "10-approvals")
    await row.get_by_role("button", name="Approve").click()
    await owner.get_by_role("dialog").get_by_role("button", name="Approve").click()
    await expect(owner.get_by_text("Approved: the refund is under way.")).to_be_visible()
    await until(lambda: _is(stack, record["id"], "REFUNDED", shop.key), 120)
    # the admin's page, left open, shows the outcome by itself
    await expect(admin.get_by_role("heading", name=re.compile("refunded"))).to_be_visible()
    await expect(waiting).to_have_count(0)
    await owner.goto(stack.console("/approvals") + "&status=all")
    await expect(owner.get_by_role("row").filter(has_text=f"#{record['id']}")).to_contain_text(
        "executed"
    )
    await shot(owner, "17-approvals-all")
    assert owner.errors == [] and admin.errors == []  # type: ignore[attr-defined]
    await admin.context.close()
    await owner.context.close()


@pytest.mark.timeout(180)
async def test_a_viewer_is_refused_every_change_and_reads_the_reports(
    stack: Stack, shop: Shop
) -> None:
    record = await new_intent(stack, "5", key=shop.key)
    viewer = await sign_in(stack, shop.emails["viewer"])
    await open_payment(viewer, stack, record["id"])
    await expect(viewer.locator("#why")).to_contain_text("Waiting for the payer")
    await expect(viewer.get_by_role("button", name="Cancel payment")).to_have_count(0)
    nav = viewer.get_by_role("navigation")
    await expect(nav.get_by_role("link", name="Team")).to_have_count(0)
    await expect(nav.get_by_role("link", name="Audit log")).to_have_count(0)
    await viewer.goto(stack.console("/webhooks"))
    await expect(viewer.get_by_role("heading", name="Webhooks", exact=True)).to_be_visible()
    await expect(viewer.get_by_role("button", name="Create")).to_have_count(0)
    await viewer.goto(stack.console("/developers"))
    await expect(viewer.get_by_role("heading", name="Developers", exact=True)).to_be_visible()
    await expect(viewer.get_by_role("button", name="Create key")).to_have_count(0)
    await shot(viewer, "11-viewer-developers")
    await nav.get_by_role("link", name="Reports").click()  # reading is not a change
    await expect(viewer.get_by_role("heading", name="Reports", exact=True)).to_be_visible()
    await expect(viewer.get_by_text("Reconciled.")).to_be_visible()
    await expect(viewer.get_by_role("link", name="Download payments")).to_be_visible()
    # and going around the page, straight to the API with the session's own CSRF token
    attempts = [
        ["POST", f"/payments/{record['id']}/cancel?mode=test", {"refund_base_units": "0"}],
        ["PUT", "/policy", {"refund_approval_above_usd": None}],
        ["POST", "/webhooks?mode=test", {"url": "https://shop.example/hooks"}],
        ["POST", "/keys?mode=test", {}],
        ["POST", "/team", {"email": "x@y.example", "role": "owner"}],
    ]
    answers = await viewer.evaluate(
        """async (attempts) => {
          const session = await (await fetch('/console/api/session')).json();
          const out = [];
          for (const [method, path, body] of attempts) {
            const r = await fetch('/console/api' + path, {method, body: JSON.stringify(body),
              headers: {'Content-Type': 'application/json', 'X-CSRF-Token': session.csrf_token}});
            out.push([r.status, (await r.json()).code]);
          }
          return out;
        }""",
        attempts,
    )
    assert answers == [[403, "forbidden_for_role"]] * len(attempts)
    assert await status_of(stack, record["id"], shop.key) == "PENDING"
    await viewer.context.close()


async def _focus(page: Page, match: str, seconds: float = 30) -> None:
    """Press Tab until the focused element's accessible text or label matches ``match``
    (each press is answered before the next: a deadline, not a count of presses)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await page.keyboard.press("Tab")
        found = await page.evaluate(
            """() => { const e = document.activeElement;
              const label = e && e.labels && e.labels[0] ? e.labels[0].textContent : '';
              return label + '|' + (e ? e.textContent : ''); }"""
        )
        if re.search(match, found):
            return
    raise AssertionError(f"no focusable element matching {match!r} in {seconds} s")


@pytest.mark.timeout(180)
async def test_the_console_works_by_keyboard_alone(stack: Stack, shop: Shop) -> None:
    record = await new_intent(stack, "5", key=shop.key)
    page = await new_page(stack)
    await page.goto(stack.console())
    email = page.get_by_label("Email")
    await expect(email).to_be_visible()  # the page is there before it is tabbed through
    await _focus(page, r"^Email\|")
    await page.keyboard.type(shop.emails["owner"])
    await _focus(page, r"^Password\|")
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    await expect(page.get_by_role("link", name="Payments", exact=True)).to_be_visible()
    await _focus(page, r"\|Payments$")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Payments", exact=True)).to_be_visible()
    await expect(page.get_by_role("link", name=f"#{record['id']}")).to_be_visible()
    await _focus(page, rf"\|#{record['id']}$")
    await page.keyboard.press("Enter")
    await expect(
        page.get_by_role("heading", name=re.compile(f"^Payment {record['id']}"))
    ).to_be_visible()
    await expect(page.get_by_role("button", name="Cancel payment")).to_be_visible()
    await _focus(page, r"\|Cancel payment$")
    await page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_be_visible()
    assert await page.evaluate("document.activeElement.textContent") == "Keep it"
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)
    assert await status_of(stack, record["id"], shop.key) == "PENDING"
    # the reports: a download by keyboard
    await page.goto(stack.console("/reports"))
    await expect(page.get_by_role("link", name="Download deposits")).to_be_visible()
    await _focus(page, r"\|Download deposits$")
    async with page.expect_download() as started:
        await page.keyboard.press("Enter")
    download = await started.value
    assert download.suggested_filename.startswith("deposits_test_")
    assert await download.failure() is None
    await page.context.close()


@pytest.mark.timeout(180)
async def test_csrf_and_session_fixation_attempts_fail(stack: Stack, shop: Shop) -> None:
    # fixation: a session id planted before sign-in is never adopted
    planted = "planted-session-id-" + "x" * 20
    page = await new_page(stack)
    await page.context.add_cookies(
        [{"name": "intentd_console", "value": planted, "url": stack.api}]
    )
    await sign_in(stack, shop.emails["developer"], page)
    cookies = {c["name"]: c["value"] for c in await page.context.cookies(stack.api)}
    assert cookies["intentd_console"] != planted
    other = await new_page(stack)
    await other.context.add_cookies(
        [{"name": "intentd_console", "value": planted, "url": stack.api}]
    )
    await other.goto(stack.console())
    await expect(other.get_by_role("heading", name="Sign in to the console")).to_be_visible()
    await other.context.close()

    # CSRF: a page of another site, opened in the signed-in browser, tries to make a key
    count = "SELECT count(*) FROM api_keys WHERE client_id = $1"
    keys = await stack.pool.fetchval(count, shop.client_id)
    evil = web.Application()
    form = (
        f'<form id="f" method="post" action="{stack.api}/console/api/keys?mode=test"'
        ' enctype="text/plain"><input name=\'{"scopes": null, "x":"\' value=\'"}\'></form>'
        f"<script>fetch('{stack.api}/console/api/keys?mode=test', {{method: 'POST',"
        " credentials: 'include', headers: {'Content-Type': 'application/json'},"
        " body: '{}'}).catch(() => {}).finally(() => document.getElementById('f').submit());"
        "</script>"
    )

    async def serve_form(_: web.Request) -> web.Response:
        return web.Response(text=form, content_type="text/html")

    evil.router.add_get("/", serve_form)
    runner = web.AppRunner(evil)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        # 127.0.0.1 on another port: another origin of the same site, so the SameSite
        # cookie is sent; the Origin check refuses it. localhost: another site, no cookie.
        for host, refusal in (("127.0.0.1", "csrf_failed"), ("localhost", "signed_out")):
            attack = await page.context.new_page()
            await attack.goto(f"http://{host}:{port}/")
            await attack.wait_for_url(re.compile(r"/console/api/keys"))
            assert f'"code":"{refusal}"' in await attack.content(), host
            await attack.close()
    finally:
        await runner.cleanup()
    assert await stack.pool.fetchval(count, shop.client_id) == keys
    await page.goto(stack.console("/developers"))  # the user is still signed in, nothing made
    await expect(page.get_by_role("heading", name="Developers")).to_be_visible()
    await page.context.close()


@pytest.mark.timeout(240)
async def test_a_failing_webhook_endpoint_shows_its_attempts_and_is_recovered_from_the_page(
    stack: Stack, shop: Shop, hooks: Hooks
) -> None:
    hooks.status = 500
    developer = await sign_in(stack, shop.emails["developer"])
    await developer.goto(stack.console("/webhooks"))
    await developer.get_by_label("URL").fill(hooks.url)
    await developer.get_by_label("Description").fill("shop backend")
    await developer.get_by_role("button", name="Create").click()
    await expect(
        developer.get_by_text(re.compile("The signing secret, shown once"))
    ).to_be_visible()
    endpoint = developer.locator("section.card", has_text=hooks.url)
    await endpoint.get_by_role("button", name="Send test").click()
    await expect(developer.get_by_text("Test event queued.")).to_be_visible()
    attempts = endpoint.get_by_role("region", name=re.compile("Delivery attempts"))
    await until(lambda: _answered(hooks, 500), 30)
    await developer.reload()
    await expect(attempts.get_by_role("cell", name="500").first).to_be_visible()
    await shot(developer, "12-webhook-failing")

    hooks.status = 410  # the endpoint says it is gone: intentd disables it
    await until(lambda: _answered(hooks, 410), 30)
    await until(lambda: _disabled(stack, shop), 30)
    await developer.reload()
    await expect(endpoint.get_by_role("alert")).to_contain_text("410 Gone")
    await shot(developer, "13-webhook-disabled")

    hooks.status = 200
    await endpoint.get_by_role("button", name="Enable").click()
    await expect(endpoint.get_by_role("button", name="Disable")).to_be_visible()
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))
    await endpoint.get_by_label("Events since").fill(since)
    await endpoint.get_by_role("button", name="Recover").click()
    await expect(
        endpoint.get_by_text(re.compile(r"[1-9]\d* failed delivery\(ies\) queued again"))
    ).to_be_visible()
    await until(lambda: _answered(hooks, 200), 30)
    await developer.reload()
    await expect(attempts.get_by_role("cell", name="200").first).to_be_visible()
    await shot(developer, "14-webhook-recovered")
    await endpoint.get_by_text("Edit", exact=True).click()
    await endpoint.get_by_label("Description").fill("orders backend")
    await endpoint.get_by_role("checkbox", name="intent_refunded").check()
    await endpoint.get_by_role("button", name="Save").click()
    await expect(endpoint).to_contain_text("orders backend · intent_refunded")
    await developer.context.close()


async def _answered(hooks: Hooks, status: int) -> bool:
    return any(r["status"] == status for r in hooks.received)


async def _disabled(stack: Stack, shop: Shop) -> bool:
    return bool(
        await stack.pool.fetchval(
            "SELECT count(*) FROM webhook_endpoints WHERE NOT enabled AND client_id = $1",
            shop.client_id,
        )
    )


@pytest.mark.timeout(180)
async def test_a_disabled_users_session_dies_and_the_audit_log_shows_every_change(
    stack: Stack, shop: Shop
) -> None:
    support = await sign_in(stack, shop.emails["support"])
    owner = await sign_in(stack, shop.emails["owner"])
    await set_threshold(stack, owner, "25")
    await owner.goto(stack.console("/team"))
    row = owner.get_by_role("row").filter(has_text=shop.emails["support"])
    await row.get_by_role("button", name="Disable").click()
    await expect(row).to_contain_text("disabled")
    await support.get_by_role("navigation").get_by_role("link", name="Payments").click()
    await expect(support.get_by_role("heading", name="Sign in to the console")).to_be_visible()
    await expect(support.get_by_text(re.compile("You were signed out"))).to_be_visible()

    await owner.goto(stack.console("/audit"))
    table = owner.get_by_role("region", name="Audit log")
    for action in ("user.disable", "policy.refund_approval", "user.signin"):
        await expect(table.get_by_role("cell", name=action, exact=True).first).to_be_visible()
    await shot(owner, "15-audit")
    assert owner.errors == []  # type: ignore[attr-defined]
    await owner.context.close()
    await support.context.close()


async def _settled(stack: Stack, shop: Shop) -> bool:
    """Every transfer of the shop's intents is confirmed (none ready, sent or held)."""
    busy = await stack.pool.fetchval(
        "SELECT count(*) FROM actions a JOIN intents i ON i.id = a.intent_id"
        " WHERE i.client_id = $1 AND a.status IN ('ready', 'submitted', 'held')",
        shop.client_id,
    )
    return busy == 0


async def _downloaded(page: Page, link: str) -> tuple[str, list[dict[str, str]], dict[str, str]]:
    """Click a download link: the file's name, its rows, and the range the link asked."""
    anchor = page.get_by_role("link", name=link)
    asked = parse_qs(urlsplit(await anchor.get_attribute("href") or "").query)
    async with page.expect_download() as started:
        await anchor.click()
    download = await started.value
    assert await download.failure() is None
    path = await download.path()
    text = await asyncio.to_thread(path.read_text)
    period = {"from": asked["from"][0], "to": asked["to"][0]}
    return download.suggested_filename, list(csv.DictReader(io.StringIO(text))), period


async def _api_rows(stack: Stack, shop: Shop, path: str, **params: str) -> list[dict[str, str]]:
    async with stack.http.get(
        f"{stack.api}/api/v1{path}",
        params=params,
        headers={"Authorization": f"Bearer {shop.key}"},
    ) as response:
        assert response.status == 200, await response.text()
        return list(csv.DictReader(io.StringIO(await response.text())))


@pytest.mark.timeout(300)
async def test_an_export_downloads_with_the_apis_rows_and_the_payments_reconcile(
    stack: Stack, shop: Shop
) -> None:
    done = await new_intent(stack, "3", key=shop.key)
    await pay(stack, done, int(float(done["total_amount_in_asset_token"]) * USDC))
    cancelled = await part_paid(stack, shop, "5", 1)
    status, _ = await api_call(
        stack, "POST", f"/intents/{cancelled['intent_address']}/cancel", key=shop.key
    )
    assert status == 200
    await until(lambda: _is(stack, done["id"], "COMPLETED", shop.key), 120)
    await until(lambda: _is(stack, cancelled["id"], "REFUNDED", shop.key), 120)
    await until(lambda: _settled(stack, shop), 120)

    viewer = await sign_in(stack, shop.emails["viewer"])  # the least of the roles reads them
    await viewer.get_by_role("navigation").get_by_role("link", name="Reports").click()
    await expect(viewer.get_by_role("heading", name="Reports", exact=True)).to_be_visible()
    verdict = viewer.locator(".verdict")
    await expect(verdict).to_have_text(re.compile(r"^Reconciled\. 2 payment\(s\) ended"))
    await expect(viewer.get_by_text("Ended: 1 completed, 1 refunded.")).to_be_visible()
    await expect(viewer.get_by_text("No mismatch.")).to_be_visible()
    totals = viewer.get_by_role("region", name="Money at the deposit addresses")
    await expect(totals.get_by_role("row").filter(has_text="BASE_TESTNET")).to_contain_text("USDC")
    await shot(viewer, "18-reports")

    for export, expected in (
        ("payments", {"payment", "relayer_repayment"}),
        ("deposits", {"deposit"}),
        ("refunds", {"refund"}),
        ("fees", None),
        ("gas", None),
    ):
        name, rows, period = await _downloaded(viewer, f"Download {export}")
        assert name.startswith(f"{export}_test_") and name.endswith(".csv"), name
        assert rows == await _api_rows(stack, shop, f"/reports/{export}", **period), export
        if expected is not None:
            assert {r["kind"] for r in rows} == expected, export
        assert {r["intent_id"] for r in rows} <= {str(done["id"]), str(cancelled["id"])}
    name, rows, period = await _downloaded(viewer, "Download the reconciliation (CSV)")
    assert name.startswith("reconciliation_test_") and name.endswith(".csv"), name
    api_rows = await _api_rows(stack, shop, "/reports/reconciliation", format="csv", **period)
    assert rows == api_rows
    assert {r["intent_id"] for r in rows} == {str(done["id"]), str(cancelled["id"])}
    assert {r["mismatches"] for r in rows} == {""}

    # a range the page cannot ask for is said so, without asking
    await viewer.goto(stack.console("/reports") + "&from=2026-11-10&to=2026-11-01")
    await expect(viewer.get_by_role("alert")).to_contain_text("ends before it starts")
    await viewer.goto(stack.console("/reports", mode="live"))
    await expect(viewer.get_by_text("No payment ended in this range.").first).to_be_visible()

    phone = await sign_in(stack, shop.emails["viewer"], **PHONE)
    await phone.goto(stack.console("/reports"))
    await expect(phone.locator(".verdict")).to_contain_text("Reconciled.")
    await shot(phone, "19-phone-reports")
    assert await phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.context.close()

    # a recorded refund one base unit off: the page lists the mismatch, with its payment
    await stack.pool.execute(
        "UPDATE actions SET amount = amount + 1 WHERE intent_id = $1 AND kind = 'user_refund'",
        cancelled["id"],
    )
    await viewer.goto(stack.console("/reports"))
    await expect(verdict).to_have_text(re.compile(r"^\d+ mismatch\(es\) in 1 payment\(s\)\."))
    mismatches = viewer.get_by_role("region", name="Mismatches")
    row = mismatches.get_by_role("row").filter(has_text=f"#{cancelled['id']}").first
    await expect(row).to_contain_text("refunded")
    await expect(row.get_by_role("link", name=f"#{cancelled['id']}")).to_be_visible()
    await shot(viewer, "18b-reports-mismatch")

    assert viewer.errors == [] and phone.errors == []  # type: ignore[attr-defined]
    await viewer.context.close()
