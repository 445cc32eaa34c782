"""The demo merchant: a shop page that opens intentd's payment modal, and its backend.

``POST /session?product=coffee|donation`` creates a payment session over intentd's
API with the merchant's API key (which never reaches the browser) and answers
intentd's JSON, whose ``session_token`` the modal uses. ``/react/NAME`` serves the same
shop in React (``clients/react/example/shop.tsx``), one page per build given
(``react_pages``: name to the folder holding its ``shop.js``). ``GET /wallet`` shows the dev
payer's account (address, key, balances on the local chains) and ``POST /dev-pay``
sends a payment from it: development tooling for the local anvil chains only.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from eth_account import Account
from web3 import Web3
from web3.types import TxParams, Wei

from intentd.domain.amounts import AmountError, format_amount, parse_amount
from intentd.settings import NATIVE_TOKEN, Settings

__all__ = ["PRODUCTS", "Shop", "merchant_app"]

STATIC = Path(__file__).parent / "static"
RECIPIENT = "0x000000000000000000000000000000000000dEaD"
"""Where the demo shop is paid (on the destination chain)."""
PRODUCTS: dict[str, str | None] = {"coffee": "3", "donation": None}
"""Each product's price in the destination token; None: the payer chooses."""
_ERC20 = [
    {
        "name": name,
        "type": "function",
        "stateMutability": mutability,
        "inputs": inputs,
        "outputs": [{"name": "", "type": output}],
    }
    for name, mutability, inputs, output in (
        (
            "transfer",
            "nonpayable",
            [{"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}],
            "bool",
        ),
        ("balanceOf", "view", [{"name": "owner", "type": "address"}], "uint256"),
    )
]


@dataclass(frozen=True)
class Shop:
    settings: Settings
    api_url: str
    """intentd's base URL, as the browser reaches it (the modal is loaded from it)."""
    api_key: str
    payer_key: str
    destination_chain: str = "ARBITRUM_TESTNET"
    token_symbol: str = "USDC"

    def destination_token(self) -> str:
        chain = self.settings.chains[self.destination_chain]
        return next(t.address for t in chain.tokens if t.symbol == self.token_symbol)


def _w3(shop: Shop, chain: str) -> Web3:
    return Web3(Web3.HTTPProvider(shop.settings.chains[chain].rpc_urls[0]))


def _wallet(shop: Shop) -> dict[str, Any]:
    account = Account.from_key(shop.payer_key)
    chains = []
    for name, chain in shop.settings.chains.items():
        w3 = _w3(shop, name)
        native = format_amount(w3.eth.get_balance(account.address), chain.native.decimals)
        tokens = [{"symbol": chain.native.symbol, "address": NATIVE_TOKEN, "balance": native}]
        for token in chain.tokens:
            contract = w3.eth.contract(address=Web3.to_checksum_address(token.address), abi=_ERC20)
            units = contract.functions.balanceOf(account.address).call()
            tokens.append(
                {
                    "symbol": token.symbol,
                    "address": Web3.to_checksum_address(token.address),
                    "balance": format_amount(int(units), token.decimals),
                }
            )
        chains.append(
            {
                "name": name,
                "chain_id": chain.chain_id,
                "rpc_url": chain.rpc_urls[0],
                "tokens": tokens,
            }
        )
    return {"address": account.address, "private_key": shop.payer_key, "chains": chains}


def send_payment(shop: Shop, chain: str, token: str, to: str, amount: Decimal | str) -> str:
    """Send ``amount`` (whole units) of ``token`` on ``chain`` from the dev payer; wait
    for the receipt; the transaction hash."""
    config = shop.settings.chains[chain]
    found = config.token(token.lower())
    if found is None:
        raise ValueError(f"{token} is not a token of {chain}")
    units = parse_amount(str(amount), found.decimals)
    w3 = _w3(shop, chain)
    account = Account.from_key(shop.payer_key)
    tx: TxParams = {
        "from": account.address,
        "nonce": w3.eth.get_transaction_count(account.address, "pending"),
        "chainId": w3.eth.chain_id,
        "maxFeePerGas": Wei(w3.eth.gas_price * 2 + 10**9),
        "maxPriorityFeePerGas": Wei(10**9),
    }
    if token.lower() == NATIVE_TOKEN.lower():
        tx.update({"to": Web3.to_checksum_address(to), "value": Wei(units), "gas": 21_000})
    else:
        contract = w3.eth.contract(address=Web3.to_checksum_address(token), abi=_ERC20)
        tx = contract.functions.transfer(Web3.to_checksum_address(to), units).build_transaction(
            {**tx, "gas": 100_000}
        )
    signed = account.sign_transaction(tx)
    tx_hash = w3.eth.send_raw_transaction(signed.raw_transaction)
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=60)
    if receipt["status"] != 1:
        raise ValueError("the transaction failed")
    return "0x" + tx_hash.hex().removeprefix("0x")


def _with_intentd(page: str, shop: Shop) -> str:
    """The page with intentd's address in ``<html data-intentd>``, where its scripts read it."""
    return page.replace(
        '<html lang="en">', f'<html lang="en" data-intentd="{html.escape(shop.api_url)}">', 1
    )


def merchant_app(shop: Shop, react_pages: Mapping[str, Path] | None = None) -> web.Application:
    app = web.Application()
    page = _with_intentd((STATIC / "shop.html").read_text(), shop)
    react_page = _with_intentd((STATIC / "react.html").read_text(), shop)
    builds = dict(react_pages or {})

    async def index(_: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    async def session(request: web.Request) -> web.Response:
        product = request.query.get("product", "")
        if product not in PRODUCTS:
            return web.json_response({"error": "unknown product"}, status=404)
        body: dict[str, Any] = {
            "recipient": RECIPIENT,
            "destinationChain": shop.destination_chain,
            "token": shop.destination_token(),
            "amount": PRODUCTS[product] or "",
        }
        if "expires_in" in request.query:  # lets the browser tests see an expiry
            body["expires_in"] = int(request.query["expires_in"])
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                f"{shop.api_url}/api/v1/sessions",
                json=body,
                headers={"Authorization": f"Bearer {shop.api_key}"},
            ) as answer,
        ):
            return web.json_response(await answer.json(), status=answer.status)

    async def wallet(_: web.Request) -> web.Response:
        return web.json_response(await asyncio.to_thread(_wallet, shop))

    async def dev_pay(request: web.Request) -> web.Response:
        data = await request.json()
        try:
            tx_hash = await asyncio.to_thread(
                send_payment, shop, data["chain"], data["token"], data["to"], data["amount"]
            )
        except (KeyError, ValueError, AmountError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"tx_hash": tx_hash})

    async def react_index(_: web.Request) -> web.StreamResponse:
        if not builds:
            text = "The React shop is not built: it needs Node.js and `make install`."
            return web.Response(text=text, status=404)
        raise web.HTTPFound(f"/react/{next(iter(builds))}")

    async def react(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in builds:
            raise web.HTTPNotFound
        script = html.escape(f"/react/{name}/shop.js")
        return web.Response(text=react_page.replace("{script}", script), content_type="text/html")

    async def react_script(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in builds:
            raise web.HTTPNotFound
        body = await asyncio.to_thread((builds[name] / "shop.js").read_bytes)
        return web.Response(body=body, content_type="text/javascript")

    app.router.add_get("/", index)
    app.router.add_get("/react", react_index)
    app.router.add_get("/react/{name}", react)
    app.router.add_get("/react/{name}/shop.js", react_script)
    app.router.add_post("/session", session)
    app.router.add_get("/wallet", wallet)
    app.router.add_post("/dev-pay", dev_pay)
    for name, media in (("shop.js", "text/javascript"), ("shop.css", "text/css")):
        app.router.add_get(f"/{name}", _file(STATIC / name, media))
    return app


def _file(path: Path, media: str) -> Any:
    body = path.read_bytes()

    async def serve(_: web.Request) -> web.Response:
        return web.Response(body=body, content_type=media)

    return serve
