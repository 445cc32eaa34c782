"""``make demo``: watch intents get funded on the local infrastructure.

Starts ``intentd run`` as a user would, creates two intents with ``intentd intents
create``, pays them from the dev payer account on the anvil chains (the first in
test USDC, too little and then a top-up; the second in native ETH, too much) and
prints every lifecycle event from Kafka as it arrives. Exits 0 once every expected
event arrived, 1 otherwise. Development tooling only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer
from eth_account import Account
from eth_typing import ChecksumAddress
from web3 import Web3
from web3.types import TxParams, Wei

from intentd.messages import events_topic
from intentd.settings import NATIVE_TOKEN, Settings, load_settings

ERC20_TRANSFER_ABI = [
    {
        "name": "transfer",
        "type": "function",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    }
]
BOLD, DIM, GREEN, YELLOW, RESET = "\033[1m", "\033[2m", "\033[32m", "\033[33m", "\033[0m"


def say(text: str) -> None:
    print(text, flush=True)


def color(text: str, code: str) -> str:
    return f"{code}{text}{RESET}" if sys.stdout.isatty() else text


class Payer:
    """The demo's end user: a funded dev account on each anvil chain."""

    def __init__(self, settings: Settings, key_file: str) -> None:
        self._account = Account.from_key(Path(key_file).read_text().strip())
        self._chains = {
            name: Web3(Web3.HTTPProvider(chain.rpc_urls[0]))
            for name, chain in settings.chains.items()
        }

    @property
    def address(self) -> ChecksumAddress:
        return Web3.to_checksum_address(self._account.address)

    def pay(self, chain: str, token: str, to: str, amount: int) -> str:
        w3 = self._chains[chain]
        tx: TxParams = {
            "from": self.address,
            "nonce": w3.eth.get_transaction_count(self.address, "pending"),
            "chainId": w3.eth.chain_id,
            "maxFeePerGas": Wei(w3.eth.gas_price * 2 + 10**9),
            "maxPriorityFeePerGas": Wei(10**9),
        }
        if token.lower() == NATIVE_TOKEN.lower():
            tx.update({"to": Web3.to_checksum_address(to), "value": Wei(amount), "gas": 21_000})
        else:
            contract = w3.eth.contract(
                address=Web3.to_checksum_address(token), abi=ERC20_TRANSFER_ABI
            )
            tx = contract.functions.transfer(
                Web3.to_checksum_address(to), amount
            ).build_transaction(tx)
        signed = self._account.sign_transaction(tx)
        tx_hash = w3.eth.send_raw_transaction(signed.raw_transaction)
        w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30)
        return "0x" + tx_hash.hex().removeprefix("0x")


def describe(event: dict[str, Any]) -> str:
    intent, data = event["intent"], event["data"]
    funding = data.get("funding", {})
    symbol = intent["asset_token_symbol"]
    line = (
        f"{color(event['type'], BOLD)} intent #{intent['id']} "
        f"[{intent['intent_status']}/{funding.get('status', '-')}] "
        f"received {funding.get('received')} of {funding.get('total')} {symbol}"
    )
    if funding.get("shortfall") not in (None, "0"):
        line += color(f", short {funding['shortfall']}", YELLOW)
    if funding.get("excess") not in (None, "0"):
        line += color(f", excess {funding['excess']} (refunded at initiation)", YELLOW)
    deposit = data.get("deposit")
    if deposit:
        line += color(f"  tx {deposit['tx_hash'][:14]}… on {deposit['chain']}", DIM)
    return line


def create_intent(config: str, **fields: str) -> dict[str, Any]:
    args = [sys.executable, "-m", "intentd", "--config", config, "intents", "create"]
    for name, value in fields.items():
        args += [f"--{name.replace('_', '-')}", value]
    result = subprocess.run(args, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"intent creation failed: {result.stderr.strip()}")
    record: dict[str, Any] = json.loads(result.stdout)
    return record


async def wait_until(check: Callable[[], Any], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


async def demo(config: str, timeout: float) -> int:
    settings = load_settings(Path(config))
    env_file = Path(config).parent / "../.local/infra.env"
    infra = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    chains = list(settings.chains)
    source, destination = chains[0], chains[1 % len(chains)]
    usdc = next(t.address for t in settings.chains[source].tokens if t.symbol == "USDC")
    payer = Payer(settings, infra["INTENTD_DEV_PAYER_KEY_FILE"])

    log_path = Path(".local/run/demo-daemon.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    say(color("starting `intentd run` (logs: .local/run/demo-daemon.log)", BOLD))
    with log_path.open("wb") as log_file:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "intentd", "--config", config, "run"],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=os.environ.copy(),
        )
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="latest",
    )
    try:
        await consumer.start()
        topic = events_topic(settings.kafka.topic_prefix)
        if topic not in await consumer.topics():
            raise SystemExit(f"Kafka topic {topic} does not exist; run `make infra-up`")
        consumer.subscribe([topic])  # no group: every partition, from the end
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
        for tp in consumer.assignment():
            await consumer.position(tp)

        async def ready() -> bool:
            if daemon.poll() is not None:
                raise SystemExit(f"the daemon exited with {daemon.returncode}; see {log_path}")
            try:
                port = settings.observability.metrics_port
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                    if r.status != 200:
                        return False
            except OSError:
                return False
            conn = await asyncpg.connect(settings.database.url.get_secret_value())
            try:
                n = await conn.fetchval(
                    "SELECT count(*) FROM chain_cursors WHERE chain = ANY($1)", chains
                )
            finally:
                await conn.close()
            return bool(n == len(chains))

        await wait_until(ready, "the daemon to be ready", 60)
        say(color("daemon ready: pollers on " + ", ".join(chains) + ", lifecycle consuming", GREEN))

        common = {
            "recipient": payer.address,
            "refund_address": payer.address,
            "sender": payer.address,
        }
        first = create_intent(
            config,
            source_chain=source,
            destination_chain=destination,
            token_in=usdc,
            amount="10",
            metadata='{"order": "demo-1"}',
            **common,
        )
        second = create_intent(
            config,
            source_chain=destination,
            destination_chain=source,
            token_in=NATIVE_TOKEN,
            amount="0.01",
            metadata='{"order": "demo-2"}',
            **common,
        )
        for record in (first, second):
            say(
                f"created intent #{record['id']}: pay {record['total_amount_in_asset_token']} "
                f"{record['asset_token_symbol']} on {record['source_chain']} to "
                f"{record['intent_address']} (expires {record['expires_at']})"
            )
        expected = {
            (first["id"], "UNDERFUNDED"),
            (first["id"], "EXACT"),
            (second["id"], "OVERFUNDED"),
        }

        say(f"paying 4 USDC of 10 to intent #{first['id']} …")
        payer.pay(source, usdc, first["intent_address"], 4_000_000)
        say(f"paying 0.015 ETH (0.01 due) to intent #{second['id']} …")
        payer.pay(destination, NATIVE_TOKEN, second["intent_address"], 15 * 10**15)

        seen: set[tuple[int, str]] = set()
        topped_up = False
        deadline = time.monotonic() + timeout
        while seen != expected and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for record in records:
                    event = json.loads(record.value)
                    intent_id = event["intent"]["id"]
                    if intent_id not in (first["id"], second["id"]):
                        continue
                    stamp = datetime.now().strftime("%H:%M:%S")
                    say(f"{color(stamp, DIM)} {describe(event)}")
                    seen.add((intent_id, event["data"]["funding"]["status"]))
            if (first["id"], "UNDERFUNDED") in seen and not topped_up:
                topped_up = True
                say(f"topping up intent #{first['id']} with the missing 6 USDC …")
                payer.pay(source, usdc, first["intent_address"], 6_000_000)
        if seen != expected:
            say(f"missing events: {sorted(expected - seen)}; daemon log: {log_path}")
            return 1
        say(color("all intents funded as expected", GREEN))
        return 0
    finally:
        await consumer.stop()
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
        say(f"daemon stopped (exit code {daemon.returncode})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/local.toml")
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(demo(args.config, args.timeout)))


if __name__ == "__main__":
    main()
