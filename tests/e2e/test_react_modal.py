"""The demo shop's React page (``clients/react/example/shop.tsx``), built from the packed
@intentd/react against React 18 and against React 19, paying through intentd's real
checkout in Debian's chromium against ``intentd run`` on the anvil chains (the stack of
tests/e2e/modal_browser.py: one daemon and one browser for the module): the payer
chooses USDC on Base Testnet, a partial payment shows what is missing, the top-up
completes it, ``onSuccess`` gets the COMPLETED intent with ``transactionHash``, which
the merchant's backend confirms with its API key; the modal's styles reach the
checkout; an excluded chain is absent; closing and Escape fire ``onCancel``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import expect
from tests.e2e.modal_browser import (
    Stack,
    buy_a_coffee,
    checkout_frame,
    choose,
    deposit,
    modal_closed,
    new_page,
    pay_in_two_parts,
    shot,
    stack,
    units,
)
from tests.react_package import EXAMPLE, bundle, packed_once

pytestmark = pytest.mark.e2e
__all__ = ["stack"]  # the module-scoped fixture, imported
REACTS = ["18", "19"]


@pytest.fixture(scope="module")
def react_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The React shop built from the packed package, per React version (the stack's shop
    serves each on /react/VERSION)."""
    packed = packed_once(tmp_path_factory)
    pages = {}
    for react in REACTS:
        out = tmp_path_factory.mktemp(f"react-shop-{react}")
        figures = bundle(packed, EXAMPLE, out / "shop.js", react=react)
        assert figures["react"].startswith(f"{react}.")
        print(f"\nReact {figures['react']} shop: {figures['gzip']} bytes gzipped")
        pages[react] = out
    return pages


@pytest.mark.timeout(240)
@pytest.mark.parametrize("react", REACTS)
async def test_the_react_shop_takes_a_payment_to_done(stack: Stack, react: str) -> None:
    page = await new_page(stack)
    await page.goto(f"{stack.shop}/react/{react}")
    await expect(page.get_by_role("heading", name="Demo shop, in React")).to_be_visible()
    frame, interactive = await buy_a_coffee(page)
    shown = interactive * 1000
    print(f"\nReact {react}: click to payment options (interactive): {shown:.0f} ms")
    look = await frame.evaluate(
        """() => { const css = getComputedStyle(document.documentElement);
          return [document.documentElement.dataset.theme, css.getPropertyValue('--accent'),
                  css.getPropertyValue('--accent-ink')]; }"""
    )
    assert look == ["light", "#6d28d9", "#fff"]  # styles={{ accentColor, theme }}
    await shot(page, f"react{react}-1-choose")

    await choose(frame, "USDC on Base Testnet", stack.payer)
    address, amount = await deposit(frame)
    await expect(frame.get_by_role("status")).to_have_text("Waiting for your payment.")
    await pay_in_two_parts(
        stack, page, frame, address, units(amount, 6), partial=f"react{react}-2-partial"
    )
    result = page.locator("#result")
    await expect(result).to_have_text(re.compile(r"^Paid: intent \d+, COMPLETED\.$"))
    paid = await page.evaluate("window.lastPayment")
    assert (paid["intent_status"], paid["intent_address"]) == ("COMPLETED", address)
    assert paid["amount_received"] == amount
    assert paid["tx_hash"].startswith("0x") and paid["transactionHash"] == paid["tx_hash"]
    # onSuccess is what the browser saw; the merchant's backend reads the intent itself
    headers = {"Authorization": f"Bearer {stack.key}"}
    async with stack.http.get(f"{stack.api}/api/v1/intents/{paid['id']}", headers=headers) as r:
        record = await r.json()
    assert (record["intent_status"], record["tx_hash"]) == ("COMPLETED", paid["tx_hash"])
    await shot(page, f"react{react}-3-done")
    await frame.get_by_role("button", name="Close").last.click()
    await modal_closed(page)
    await expect(result).to_have_text(re.compile(r"^Paid: "))  # closing after success: no cancel
    assert await page.evaluate("document.activeElement.textContent") == "Buy a coffee: 3 USDC"
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("react", REACTS)
async def test_the_react_shop_leaves_out_an_excluded_chain_and_reports_a_cancel(
    stack: Stack, react: str
) -> None:
    page = await new_page(stack)
    await page.goto(f"{stack.shop}/react/{react}")
    await page.get_by_role("button", name="Buy a coffee, not from Base Testnet").click()
    frame = await checkout_frame(page)
    await expect(frame.get_by_role("radio").first).to_be_visible()
    labels = await frame.locator("label[for^=option]").all_inner_texts()
    assert labels and not any("Base Testnet" in t for t in labels), labels
    assert any("Arbitrum Testnet" in t for t in labels), labels
    await frame.get_by_role("button", name="Cancel").click()  # the frame's close button
    await modal_closed(page)
    result = page.locator("#result")
    await expect(result).to_have_text("Payment cancelled.")

    await page.get_by_role("button", name="Donate: you choose the amount").click()
    frame = await checkout_frame(page, old=frame)
    await expect(frame.get_by_label("Amount to pay (USDC)")).to_be_visible()
    await expect(result).to_have_text("")
    await page.keyboard.press("Escape")
    await modal_closed(page)
    await expect(result).to_have_text("Payment cancelled.")
    assert page.errors == []  # type: ignore[attr-defined]
