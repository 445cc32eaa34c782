"""The payment modal and the hosted checkout page in a real browser (Debian's chromium
driven by Playwright) against ``intentd run`` on the anvil chains: the demo shop opens
the modal, the payer chooses a chain and token, pays the shown address with real
transactions from the dev payer, and watches the status move to done; an excluded
chain is absent; an open amount is entered; a partial payment shows what is missing;
an expired session says so and starts again; the hosted page completes a payment by
keyboard at phone width. Screenshots of each state go to $INTENTD_SCREENSHOTS
(default: the temporary directory's intentd-modal-screens)."""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from playwright.async_api import Frame, Page, expect
from tests.e2e.modal_browser import (
    USDC,
    Stack,
    buy_a_coffee,
    checkout_frame,
    choose,
    deposit,
    modal_closed,
    new_page,
    pay_in_two_parts,
    qr_text,
    shot,
    stack,
    units,
)
from tests.support import send_payments

from intentd.settings import NATIVE_TOKEN

pytestmark = pytest.mark.e2e
__all__ = ["stack"]  # the module-scoped fixture, imported


@pytest.mark.timeout(300)
async def test_the_modal_takes_a_payment_from_the_shop_to_done(stack: Stack) -> None:
    page = await new_page(stack)
    await page.goto(stack.shop)
    await expect(page.get_by_text(stack.payer).first).to_be_visible()  # the dev wallet shown
    frame, interactive = await buy_a_coffee(page)
    print(f"\nmodal: click to payment options shown (interactive): {interactive * 1000:.0f} ms")
    options = await frame.get_by_role("radio").all()
    names = [await o.evaluate("e => e.labels[0].innerText") for o in options]
    assert any("USDC on Base Testnet" in n for n in names), names
    assert any("USDT on Arbitrum Testnet" in n for n in names), names
    await shot(page, "modal-1-choose")

    usdc = stack.infra["INTENTD_BASE_TESTNET_USDC"]
    await choose(frame, "USDC on Base Testnet", stack.payer)
    await expect(frame.get_by_role("heading", name=re.compile(r"^Send .* USDC$"))).to_be_visible()
    address, amount = await deposit(frame)
    total = units(amount, 6)
    assert total >= 3 * USDC
    chain_id = 84532
    expected_uri = f"ethereum:{usdc}@{chain_id}/transfer?address={address}&uint256={total}"
    assert qr_text(await frame.locator("svg.qr path").get_attribute("d") or "") == expected_uri
    await expect(frame.get_by_role("timer")).to_contain_text(re.compile(r"Expires in \d+:\d\d"))
    status = frame.get_by_role("status")
    await expect(status).to_have_text("Waiting for your payment.")
    await shot(page, "modal-2-pay")

    await pay_in_two_parts(stack, page, frame, address, total, partial="modal-3-partial")
    await expect(page.locator("#result")).to_have_text(re.compile(r"^Paid: intent \d+, COMPLETED"))
    paid = await page.evaluate("window.lastPayment")
    assert paid["intent_status"] == "COMPLETED"
    assert paid["intent_address"] == address
    assert paid["amount_received"] == amount
    await frame.wait_for_function("innerHeight < 500")  # the box fits the short end screen
    await shot(page, "modal-4-done")
    await frame.get_by_role("button", name="Close").last.click()
    await modal_closed(page)
    assert await page.evaluate("document.activeElement.textContent") == "Buy a coffee: 3 USDC"
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.timeout(120)
async def test_an_excluded_chain_is_absent_and_an_open_amount_is_entered(stack: Stack) -> None:
    page = await new_page(stack)
    await page.goto(stack.shop)
    await page.get_by_role("button", name="Buy a coffee, not from Base Testnet").click()
    frame = await checkout_frame(page)
    await expect(frame.get_by_role("radio").first).to_be_visible()
    labels = await frame.locator("label[for^=option]").all_inner_texts()
    assert labels and not any("Base Testnet" in t for t in labels), labels
    assert any("Arbitrum Testnet" in t for t in labels), labels
    assert await tab_through(page, frame) == set()  # every control, and focus stays inside
    assert await frame.evaluate("document.hasFocus()")
    await shot(page, "modal-5-excluded")
    await page.keyboard.press("Escape")
    await expect(page.locator("#result")).to_have_text("Payment cancelled.")

    await page.get_by_role("button", name="Donate: you choose the amount").click()
    frame = await checkout_frame(page)
    field = frame.get_by_label("Amount to pay (USDC)")
    await expect(field).to_be_visible()
    await field.fill("abc")
    await frame.get_by_role("button", name="Show payment options").click()
    await expect(frame.get_by_role("alert")).to_have_text("Enter an amount, such as 12.50.")
    await field.fill("1" + "0" * 80)  # a number the page takes and the API refuses (422)
    await frame.get_by_role("button", name="Show payment options").click()
    await expect(frame.get_by_role("alert")).not_to_be_empty()
    await expect(field).to_have_attribute("aria-invalid", "true")
    await field.fill("2.5")
    await frame.get_by_role("button", name="Show payment options").click()
    await expect(frame.get_by_role("heading", name="Pay 2.5 USDC")).to_be_visible()
    await expect(frame.get_by_text(re.compile("gets 2.5 USDC on Arbitrum Testnet"))).to_be_visible()
    await shot(page, "modal-6-open-amount")
    unexpected = [e for e in page.errors if "422" not in e]  # type: ignore[attr-defined]
    assert unexpected == []


FOCUSABLE = "button, input, a[href], select, textarea, [tabindex='0']"
UNNAMED = """() => [...document.querySelectorAll("button, input, a[href], svg[role=img]")]
  .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
    && !el.textContent.trim()).map((el) => el.outerHTML)"""


async def tab_through(page: Page, frame: Frame) -> set[str]:
    """Press Tab round the page several times; the controls never reached."""
    describe = (  # a radio group is one stop (arrow keys move within it)
        "(e) => e.type === 'radio' ? 'radio group:' + e.name"
        " : e.tagName + ':' + (e.id || e.getAttribute('aria-label') || e.textContent)"
    )
    expected = set(await frame.locator(FOCUSABLE).evaluate_all(f"es => es.map({describe})"))
    reached: set[str] = set()
    for _ in range(3 * len(expected) + 3):
        await page.keyboard.press("Tab")
        reached.add(await frame.evaluate(f"({describe})(document.activeElement)"))
    return expected - reached


@pytest.mark.timeout(240)
async def test_the_hosted_page_takes_an_overpaid_native_payment_by_keyboard_at_phone_width(
    stack: Stack,
) -> None:
    token = await new_session(stack, amount="")
    page = await new_page(stack, 390, 844)
    started = time.monotonic()
    await page.goto(f"{stack.api}/pay/checkout#session={token}")
    field = page.get_by_label("Amount to pay (ETH)")
    await expect(field).to_be_visible()
    print(f"\nhosted page: load to interactive: {(time.monotonic() - started) * 1000:.0f} ms")
    assert await page.evaluate(UNNAMED) == []
    await page.keyboard.press("Tab")
    await expect(field).to_be_focused()
    await page.keyboard.type("0.001")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Pay 0.001 ETH")).to_be_focused()
    snapshot = await page.locator("main").aria_snapshot()
    for part in (
        'heading "Pay 0.001 ETH"',
        'group "Pay with"',
        'radio "ETH on Base Testnet',
        'textbox "Your wallet address (for refunds)"',
        'button "Continue"',
    ):
        assert part in snapshot, snapshot
    assert await page.evaluate(UNNAMED) == []
    assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    await shot(page, "hosted-1-choose-phone")

    await page.keyboard.press("Tab")  # the first radio of the group
    await page.keyboard.press("Space")
    while "Base Testnet" not in await page.evaluate("document.activeElement.labels[0].innerText"):
        await page.keyboard.press("ArrowDown")
    await page.keyboard.press("Tab")
    await expect(page.get_by_label("Your wallet address (for refunds)")).to_be_focused()
    await page.keyboard.type(stack.payer)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name=re.compile(r"^Send 0\.001 ETH$"))).to_be_visible()
    address, amount = await deposit(page.main_frame)
    uri = qr_text(await page.locator("svg.qr path").get_attribute("d") or "")
    assert uri == f"ethereum:{address}@84532?value={units(amount, 18)}"
    copy = page.get_by_role("button", name="Copy the deposit address")
    await copy.click()
    await expect(copy).to_have_text("Copied")
    assert await page.evaluate("navigator.clipboard.readText()") == address
    await page.get_by_role("button", name="Copy the amount").click()
    assert await page.evaluate("navigator.clipboard.readText()") == amount
    await expect(page.locator("#announcer")).to_have_text(f"Copied: {amount}")  # read out
    assert await tab_through(page, page.main_frame) == set()
    assert await page.evaluate(UNNAMED) == []
    assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    await shot(page, "hosted-2-pay-phone")

    rpc = stack.infra["INTENTD_BASE_TESTNET_RPC_URL"]
    over = units(amount, 18) + 5 * 10**14  # 0.0005 ETH too much: refunded at initiation
    await asyncio.to_thread(send_payments, rpc, stack.payer_key, [(NATIVE_TOKEN, address, over)])
    made = page.get_by_role("button", name="I have made payment")
    async with page.expect_response(lambda r: r.url.endswith("/payment-made")) as answer_info:
        await made.focus()
        await page.keyboard.press("Enter")
    assert (await answer_info.value).status == 200
    await expect(page.get_by_role("heading", name="Payment complete")).to_be_visible(timeout=90_000)
    await expect(page.get_by_text("You sent 0.0005 ETH more than needed")).to_have_text(
        f"You sent 0.0005 ETH more than needed: it goes back to {stack.payer}."
    )
    await shot(page, "hosted-3-done-phone")
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.timeout(240)
async def test_an_expired_session_says_so_and_starts_again(stack: Stack) -> None:
    """The classic script form (pay.js), a 60 s session, a partial payment, expiry."""
    page = await new_page(stack)
    await page.goto(stack.shop)
    await page.add_script_tag(url=f"{stack.api}/pay/pay.js")
    await page.evaluate(
        """() => { window.events = []; window.IntentdPay.openPayment({
          session_url: '/session?product=coffee&expires_in=60',
          onSuccess: () => window.events.push('success'),
          onCancel: () => window.events.push('cancel'),
          onError: (e) => window.events.push('error:' + e.code) }); }"""
    )
    frame = await checkout_frame(page)
    await choose(frame, "USDC on Base Testnet", stack.payer)
    address, _ = await deposit(frame)
    usdc = stack.infra["INTENTD_BASE_TESTNET_USDC"]
    rpc = stack.infra["INTENTD_BASE_TESTNET_RPC_URL"]
    await asyncio.to_thread(send_payments, rpc, stack.payer_key, [(usdc, address, USDC)])
    await expect(frame.get_by_role("status")).to_contain_text("Still missing", timeout=30_000)
    await expect(frame.get_by_role("heading", name="This payment has expired")).to_be_visible(
        timeout=90_000
    )
    await expect(frame.get_by_role("alert")).to_have_text(
        f"What you sent (1 USDC) goes back to {stack.payer}."
    )
    await shot(page, "modal-7-expired")
    await frame.get_by_role("button", name="Start again").click()
    frame = await checkout_frame(page, old=frame)
    await expect(frame.get_by_role("heading", name="Pay 3 USDC")).to_be_visible()
    await page.keyboard.press("Escape")
    await modal_closed(page)
    await page.wait_for_function("window.events.length > 0")
    assert await page.evaluate("window.events") == ["cancel"]
    assert page.errors == []  # type: ignore[attr-defined]


async def new_session(stack: Stack, **fields: str) -> str:
    """A checkout session paying ETH to the payer on Arbitrum Testnet (``fields``
    added: ``amount=""`` lets the payer enter the amount); its token."""
    async with stack.http.post(
        f"{stack.api}/api/v1/sessions",
        json={
            "recipient": stack.payer,
            "destinationChain": "ARBITRUM_TESTNET",
            "token": NATIVE_TOKEN,
            **fields,
        },
        headers={"Authorization": f"Bearer {stack.key}"},
    ) as answer:
        assert answer.status == 201
        token: str = (await answer.json())["session_token"]
        return token


@pytest.mark.timeout(120)
async def test_a_session_token_in_the_query_string_is_refused_with_a_clear_message(
    stack: Stack,
) -> None:
    """A token in ``?session=`` has reached the server's logs (and the Referer of a
    careless page): the page never uses it, says why and what to do, and takes it out
    of the address bar. The same token in the fragment works."""
    token = await new_session(stack)
    page = await new_page(stack)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/v1/" in r.url else None)
    await page.goto(f"{stack.api}/pay/checkout?session={token}&lang=en")
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("#session=")
    await expect(page.get_by_role("heading", name="This link cannot be used")).to_be_visible()
    assert asked == [], "the page called the API with a token from the query string"
    assert token not in page.url and "lang=en" in page.url
    await shot(page, "hosted-query-token")

    await page.goto(f"{stack.api}/pay/checkout#session={token}")
    await expect(page.get_by_role("heading", name="Pay in ETH")).to_be_visible()
    assert page.errors == []  # type: ignore[attr-defined]
