"""Helpers of tests/e2e/test_sigterm.py: daemons as subprocesses that SIGTERM reaches,
the processes they leave, and a flow of API intents each paid once on chain."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from intentd.settings import NATIVE_TOKEN
from tests.support import PAYEE, ROOT, TRANSFER_ABI, send_payments, until_serving

UNIT = 10**6  # one USDC
SOURCE, DESTINATION = "BASE_TESTNET", "ARBITRUM_TESTNET"


def seed() -> int:
    chosen = int(os.environ.get("SIGTERM_SEED") or secrets.randbelow(10**6))
    print(f"\nSIGTERM_SEED={chosen}")
    return chosen


def spawn(args: list[str], env: dict[str, str], log: Path, mark: str) -> subprocess.Popen[bytes]:
    """``intentd ARGS`` with ``mark`` in its environment (its children inherit it)."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "intentd", "--config", str(ROOT / "config/local.toml"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**env, "INTENTD_TEST_MARK": mark},
            cwd=ROOT,
        )


def marked(mark: str) -> list[int]:
    """Processes alive with ``mark`` in their environment."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"INTENTD_TEST_MARK={mark}".encode() in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


async def terminate(
    process: subprocess.Popen[bytes], deadline: float, *, again_after: float | None = None
) -> tuple[int, float]:
    """SIGTERM (and a second one ``again_after`` seconds later, if given); (exit status,
    seconds until exit). SIGKILL and fail past ``deadline``."""
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    while process.poll() is None:
        if again_after is not None and time.monotonic() - sent > again_after:
            process.send_signal(signal.SIGTERM)
            again_after = None
        if time.monotonic() - sent > deadline:
            process.kill()
            process.wait()
            raise AssertionError(f"no exit within {deadline} s of SIGTERM")
        await asyncio.sleep(0.02)
    return process.returncode, time.monotonic() - sent


class Payer:
    """An account of this test alone (the dev payer is shared): its own nonces."""

    def __init__(self, rpc_url: str, funder_key: str, token: str, units: int) -> None:
        from eth_account import Account
        from web3 import Web3

        self._w3 = Web3(Web3.HTTPProvider(rpc_url))
        self._account = Account.create()
        self._token = self._w3.eth.contract(
            address=Web3.to_checksum_address(token), abi=TRANSFER_ABI
        )
        me = self._account.address
        send_payments(rpc_url, funder_key, [(NATIVE_TOKEN, me, 10**18), (token, me, units)])
        self._nonce = 0

    @property
    def address(self) -> str:
        return str(self._account.address)

    def pay(self, to: str, amount: int) -> str:
        """Transfer ``amount`` of the token to ``to``; the hash, once mined."""
        from web3 import Web3

        tx = self._token.functions.transfer(Web3.to_checksum_address(to), amount)
        built = tx.build_transaction(
            {
                "from": self._account.address,
                "chainId": self._w3.eth.chain_id,
                "nonce": self._nonce,
                "gas": 100_000,
                "maxFeePerGas": self._w3.eth.gas_price * 2 + 10**9,
                "maxPriorityFeePerGas": 10**9,
            }
        )
        self._nonce += 1
        sent = self._w3.eth.send_raw_transaction(
            self._account.sign_transaction(built).raw_transaction
        )
        receipt = self._w3.eth.wait_for_transaction_receipt(sent, timeout=60)
        assert receipt["status"] == 1, receipt
        return "0x" + bytes(sent).hex().removeprefix("0x")


@dataclass
class Flow:
    """Intents created through the API and each paid once, until told to end."""

    api: str
    key: str
    usdc: str
    payer: Payer
    created: list[dict[str, Any]] = field(default_factory=list)
    payments: dict[str, int] = field(default_factory=dict)  # tx hash: intent id
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    async def create(self) -> None:
        body = {"amount": "1", "amountSymbol": "USDC", "tokenIn": self.usdc,
                "source_chain": SOURCE, "destination_chain": DESTINATION,
                "recipient": PAYEE, "refund_address": PAYEE}  # fmt: skip
        headers = {"Authorization": f"Bearer {self.key}"}
        async with aiohttp.ClientSession(headers=headers) as http:
            while not self.ended.is_set():
                if len(self.created) - len(self.payments) > 5:  # the payer keeps up
                    await asyncio.sleep(0.05)
                    continue
                try:
                    async with http.post(f"{self.api}/intents", json=body) as response:
                        if response.status == 201:  # anything else: nothing promised
                            self.created.append(await response.json())
                except aiohttp.ClientError:
                    pass  # the daemon is down or stopping
                await asyncio.sleep(0.1)

    async def pay(self) -> None:
        paid = 0
        while not self.ended.is_set() or paid < len(self.created):
            if paid == len(self.created):
                await asyncio.sleep(0.05)
                continue
            intent = self.created[paid]
            tx = await asyncio.to_thread(self.payer.pay, intent["intent_address"], UNIT)
            self.payments[tx] = intent["id"]
            paid += 1


async def wait_ready(process: subprocess.Popen[bytes], api: str, log: Path) -> None:
    await until_serving(process, f"{api}/openapi.json", log)
