"""The merchant console in a real browser (Debian's chromium under Playwright) against
``intentd run`` on the anvil chains, one browser and one daemon for the module: users
set their passwords from the links ``intentd users create`` printed; payments made
with real transactions show on every page; sign-in with and without the second
factor; support refunds below the threshold; an admin's refund above it waits until
an owner approves; a viewer is refused every change; CSRF and session fixation fail;
a failing webhook endpoint shows its attempts and is recovered from the page; a
disabled user's session dies. Screenshots of each page (desktop and phone width) go
to $INTENTD_SCREENSHOTS (default: .screens/console, ignored by git)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pyotp
import pytest
from aiohttp import web
from playwright.async_api import Page, expect
from tests.e2e.console_browser import (
    EXPLORER,
    PASSWORD,
    Stack,
    api_call,
    free_port,
    new_intent,
    new_page,
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
__all__ = ["stack"]
USDC = 10**6
PHONE = {"width": 390, "height": 844}
STATE: dict[str, Any] = {}
"""What the tests of this module hand on: pages, intents, the admin's TOTP secret."""


async def pay(stack: Stack, record: dict[str, Any], amount: int) -> None:
    rpc = stack.infra["INTENTD_BASE_TESTNET_RPC_URL"]
    await asyncio.to_thread(
        send_payments, rpc, stack.payer_key, [(usdc(stack), record["intent_address"], amount)]
    )


async def status_of(stack: Stack, intent_id: int) -> str:
    status, record = await api_call(stack, "GET", f"/intents/{intent_id}")
    assert status == 200, record
    return str(record["intent_status"])


async def received(stack: Stack, intent_id: int, amount: str) -> bool:
    status, record = await api_call(stack, "GET", f"/intents/{intent_id}")
    return status == 200 and bool(record["amount_received"] == amount)


async def open_payment(page: Page, stack: Stack, intent_id: int) -> None:
    await page.goto(stack.console(f"/payments/{intent_id}"))
    await expect(
        page.get_by_role("heading", name=re.compile(f"^Payment {intent_id}"))
    ).to_be_visible()


@pytest.mark.timeout(300)
async def test_users_set_their_passwords_and_every_page_shows_the_payments(stack: Stack) -> None:
    done = await new_intent(stack, "3")
    partial = await new_intent(stack, "5")
    await new_intent(stack, "2")
    await pay(stack, done, int(float(done["total_amount_in_asset_token"]) * USDC))
    await pay(stack, partial, 1 * USDC)
    owner = await use_link(stack, "owner")
    STATE["owner"] = owner
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
    await expect(owner.get_by_role("link", name=f"#{fresh['id']}")).to_be_visible(timeout=15_000)
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
    await expect(ours.get_by_role("cell", name="prefill")).to_be_visible()
    await expect(ours.get_by_role("cell", name=re.compile(r"^\d+$")).first).to_be_visible()  # gas
    await shot(owner, "4-payment-completed")

    phone = await sign_in(stack, "owner", **PHONE)
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
    STATE["partial"] = partial
    assert owner.errors == []  # type: ignore[attr-defined]


async def _is(stack: Stack, intent_id: int, status: str) -> bool:
    return await status_of(stack, intent_id) == status


async def _takes(step: int) -> bool:
    return step <= int(time.time()) // 30 + 1


async def sign_in_with_code(stack: Stack, role: str, secret: str) -> Page:
    page = await new_page(stack)
    await page.goto(stack.console())
    await page.get_by_label("Email").fill(stack.emails[role])
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Second factor")).to_be_visible()
    used = STATE.setdefault("steps", set())
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
async def test_sign_in_with_and_without_the_second_factor(stack: Stack) -> None:
    admin = await sign_in(stack, "admin")  # without: the password alone
    await admin.goto(stack.console("/account"))
    await admin.get_by_role("button", name="Turn on").click()
    secret = (await admin.locator(".secret code").inner_text()).strip()
    await expect(
        admin.get_by_role("img", name="QR code of the authenticator setup")
    ).to_be_visible()
    drawn = qr_text(await admin.locator("svg.qr path").get_attribute("d") or "")
    label = stack.emails["admin"].replace("@", "%40")
    assert drawn == f"otpauth://totp/intentd%3A{label}?secret={secret}&issuer=intentd"
    await shot(admin, "6-account-totp-setup")
    step = int(time.time()) // 30
    STATE.setdefault("steps", set()).add(step)
    await admin.get_by_label("Code", exact=True).fill(pyotp.TOTP(secret).at(step * 30))
    await admin.get_by_role("button", name="Confirm").click()
    await expect(admin.locator("ul.codes li")).to_have_count(10)
    await admin.get_by_role("button", name="Sign out").click()
    await expect(admin.get_by_role("heading", name="Sign in to the console")).to_be_visible()
    await admin.context.close()
    STATE["admin_secret"] = secret
    with_code = await sign_in_with_code(stack, "admin", secret)
    await with_code.context.close()


@pytest.mark.timeout(240)
async def test_support_refunds_below_the_threshold(stack: Stack) -> None:
    owner: Page = STATE["owner"]
    await owner.goto(stack.console("/team"))
    await owner.get_by_label("Threshold (USD)").fill("2")
    await owner.get_by_role("button", name="Save").click()
    await expect(owner.get_by_text("Saved.")).to_be_visible()
    await shot(owner, "7-team")

    record = await new_intent(stack, "5")
    await pay(stack, record, 1 * USDC)
    await until(lambda: received(stack, record["id"], "1"), 60)
    support = await sign_in(stack, "support")
    await open_payment(support, stack, record["id"])
    await support.get_by_role("button", name="Cancel payment").click()
    dialog = support.get_by_role("dialog")
    await expect(dialog).to_contain_text(f"1 USDC goes back to {stack.payer}")
    await expect(dialog).not_to_contain_text("approval")
    await shot(support, "8-cancel-confirmation")
    await dialog.get_by_role("button", name="Cancel payment").click()
    await expect(support.get_by_text("Payment cancelled.")).to_be_visible()
    await until(lambda: _is(stack, record["id"], "REFUNDED"), 120)
    await expect(support.get_by_role("heading", name=re.compile("refunded"))).to_be_visible(
        timeout=15_000
    )
    STATE["support"] = support


@pytest.mark.timeout(240)
async def test_an_admins_refund_above_the_threshold_waits_until_an_owner_approves(
    stack: Stack,
) -> None:
    record = await new_intent(stack, "5")
    await pay(stack, record, 3 * USDC)
    await until(lambda: received(stack, record["id"], "3"), 60)
    admin = await sign_in_with_code(stack, "admin", STATE["admin_secret"])
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
    await asyncio.sleep(0)  # the admin's page stays open: it shows the outcome later
    assert await status_of(stack, record["id"]) == "PENDING"  # nothing refunded yet

    owner: Page = STATE["owner"]
    await owner.goto(stack.console("/approvals"))
    row = owner.get_by_role("row").filter(has_text=f"#{record['id']}")
    await expect(row).to_contain_text("3 USDC")
    await expect(row).to_contain_text(stack.emails["admin"])
    await shot(owner, "10-approvals")
    await row.get_by_role("button", name="Approve").click()
    await owner.get_by_role("dialog").get_by_role("button", name="Approve").click()
    await expect(owner.get_by_text("Approved: the refund is under way.")).to_be_visible()
    await until(lambda: _is(stack, record["id"], "REFUNDED"), 120)
    await expect(admin.get_by_role("heading", name=re.compile("refunded"))).to_be_visible(
        timeout=15_000
    )
    await expect(waiting).to_have_count(0)
    await admin.context.close()


@pytest.mark.timeout(120)
async def test_a_viewer_is_refused_every_change(stack: Stack) -> None:
    viewer = await sign_in(stack, "viewer")
    partial = STATE["partial"]
    await open_payment(viewer, stack, partial["id"])
    await expect(viewer.get_by_role("button", name="Cancel payment")).to_have_count(0)
    nav = viewer.get_by_role("navigation")
    await expect(nav.get_by_role("link", name="Team")).to_have_count(0)
    await expect(nav.get_by_role("link", name="Audit log")).to_have_count(0)
    await viewer.goto(stack.console("/webhooks"))
    await expect(viewer.get_by_role("heading", name="Webhooks", exact=True)).to_be_visible()
    await expect(viewer.get_by_role("button", name="Create")).to_have_count(0)
    await viewer.goto(stack.console("/developers"))
    await expect(viewer.get_by_role("button", name="Create key")).to_have_count(0)
    await shot(viewer, "11-viewer-developers")
    # and going around the page, straight to the API with the session's own CSRF token
    attempts = [
        ["POST", f"/payments/{partial['id']}/cancel?mode=test", {"refund_base_units": "1000000"}],
        ["PUT", "/policy", {"refund_approval_above_usd": None}],
        ["POST", "/webhooks?mode=test", {"url": stack.hooks.url}],
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
    await viewer.context.close()


async def _focus(page: Page, match: str, presses: int = 60) -> None:
    """Press Tab until the focused element's accessible text or label matches ``match``."""
    for _ in range(presses):
        await page.keyboard.press("Tab")
        found = await page.evaluate(
            """() => { const e = document.activeElement;
              const label = e.labels && e.labels[0] ? e.labels[0].textContent : '';
              return label + '|' + e.textContent; }"""
        )
        if re.search(match, found):
            return
    raise AssertionError(f"no focusable element matching {match!r}")


@pytest.mark.timeout(120)
async def test_the_console_works_by_keyboard_alone(stack: Stack) -> None:
    page = await new_page(stack)
    await page.goto(stack.console())
    await _focus(page, r"^Email\|")
    await page.keyboard.type(stack.emails["owner"])
    await _focus(page, r"^Password\|")
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    await _focus(page, r"\|Payments$")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Payments", exact=True)).to_be_visible()
    partial = STATE["partial"]
    await _focus(page, rf"\|#{partial['id']}$")
    await page.keyboard.press("Enter")
    await expect(
        page.get_by_role("heading", name=re.compile(f"^Payment {partial['id']}"))
    ).to_be_visible()
    await _focus(page, r"\|Cancel payment$")
    await page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_be_visible()
    assert await page.evaluate("document.activeElement.textContent") == "Keep it"
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)
    assert await status_of(stack, partial["id"]) == "PENDING"
    await page.context.close()


@pytest.mark.timeout(120)
async def test_csrf_and_session_fixation_attempts_fail(stack: Stack) -> None:
    # fixation: a session id planted before sign-in is never adopted
    planted = "planted-session-id-" + "x" * 20
    page = await new_page(stack)
    await page.context.add_cookies(
        [{"name": "intentd_console", "value": planted, "url": stack.api}]
    )
    await sign_in(stack, "developer", page)
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
    keys = await stack.pool.fetchval("SELECT count(*) FROM api_keys")
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
            await attack.wait_for_url(re.compile(r"/console/api/keys"), timeout=10_000)
            assert f'"code":"{refusal}"' in await attack.content(), host
            await attack.close()
    finally:
        await runner.cleanup()
    assert await stack.pool.fetchval("SELECT count(*) FROM api_keys") == keys
    await page.goto(stack.console("/developers"))  # the user is still signed in, nothing made
    await expect(page.get_by_role("heading", name="Developers")).to_be_visible()
    await page.context.close()


@pytest.mark.timeout(240)
async def test_a_failing_webhook_endpoint_shows_its_attempts_and_is_recovered_from_the_page(
    stack: Stack,
) -> None:
    stack.hooks.status = 500
    developer = await sign_in(stack, "developer")
    await developer.goto(stack.console("/webhooks"))
    await developer.get_by_label("URL").fill(stack.hooks.url)
    await developer.get_by_label("Description").fill("shop backend")
    await developer.get_by_role("button", name="Create").click()
    await expect(
        developer.get_by_text(re.compile("The signing secret, shown once"))
    ).to_be_visible()
    endpoint = developer.locator("section.card", has_text=stack.hooks.url)
    await endpoint.get_by_role("button", name="Send test").click()
    await expect(developer.get_by_text("Test event queued.")).to_be_visible()
    attempts = endpoint.get_by_role("region", name=re.compile("Delivery attempts"))
    await until(lambda: _answered(stack, 500), 30)
    await developer.reload()
    await expect(attempts.get_by_role("cell", name="500").first).to_be_visible(timeout=15_000)
    await shot(developer, "12-webhook-failing")

    stack.hooks.status = 410  # the endpoint says it is gone: intentd disables it
    await until(lambda: _answered(stack, 410), 30)
    await until(lambda: _disabled(stack), 30)
    await developer.reload()
    await expect(endpoint.get_by_role("alert")).to_contain_text("410 Gone")
    await shot(developer, "13-webhook-disabled")

    stack.hooks.status = 200
    await endpoint.get_by_role("button", name="Enable").click()
    await expect(endpoint.get_by_role("button", name="Disable")).to_be_visible()
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))
    await endpoint.get_by_label("Events since").fill(since)
    await endpoint.get_by_role("button", name="Recover").click()
    await expect(
        endpoint.get_by_text(re.compile(r"[1-9]\d* failed delivery\(ies\) queued again"))
    ).to_be_visible()
    await until(lambda: _answered(stack, 200), 30)
    await developer.reload()
    await expect(attempts.get_by_role("cell", name="200").first).to_be_visible(timeout=15_000)
    await shot(developer, "14-webhook-recovered")
    await endpoint.get_by_text("Edit", exact=True).click()
    await endpoint.get_by_label("Description").fill("orders backend")
    await endpoint.get_by_role("checkbox", name="intent_refunded").check()
    await endpoint.get_by_role("button", name="Save").click()
    await expect(endpoint).to_contain_text("orders backend · intent_refunded")
    await developer.context.close()


async def _answered(stack: Stack, status: int) -> bool:
    return any(r["status"] == status for r in stack.hooks.received)


async def _disabled(stack: Stack) -> bool:
    return bool(
        await stack.pool.fetchval("SELECT count(*) FROM webhook_endpoints WHERE NOT enabled")
    )


@pytest.mark.timeout(120)
async def test_a_disabled_users_session_dies_and_the_audit_log_shows_every_change(
    stack: Stack,
) -> None:
    support: Page = STATE["support"]
    await support.goto(stack.console())
    await expect(support.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    owner: Page = STATE["owner"]
    await owner.goto(stack.console("/team"))
    row = owner.get_by_role("row").filter(has_text=stack.emails["support"])
    await row.get_by_role("button", name="Disable").click()
    await expect(row).to_contain_text("disabled")
    await support.get_by_role("navigation").get_by_role("link", name="Payments").click()
    await expect(support.get_by_role("heading", name="Sign in to the console")).to_be_visible()
    await expect(support.get_by_text(re.compile("You were signed out"))).to_be_visible()

    await owner.goto(stack.console("/audit"))
    table = owner.get_by_role("region", name="Audit log")
    for action in (
        "approval.approve",
        "intent.cancel",
        "user.disable",
        "webhook.recover",
        "user.totp_on",
    ):
        await expect(table.get_by_role("cell", name=action, exact=True).first).to_be_visible()
    await shot(owner, "15-audit")
    await owner.goto(stack.console("/developers"))
    await expect(
        owner.get_by_role("region", name="Event log")
        .get_by_role("cell", name="intent_refunded")
        .first
    ).to_be_visible()
    await shot(owner, "16-developers")
    await owner.goto(stack.console("/approvals") + "&status=all")
    await shot(owner, "17-approvals-all")
    assert owner.errors == []  # type: ignore[attr-defined]
