"""``make demo``: watch intents go through their lifecycle on the local infrastructure.

Starts ``intentd run`` as a user would, creates an API key with ``intentd keys
create``, creates three intents over the HTTP API (``POST /api/v1/intents``) and pays
them from the dev payer account on the anvil chains: the first in test USDC, too
little and then a top-up; the second in native ETH, too much; the third in part, left
to expire. It prints every lifecycle event from Kafka as it arrives (funded,
initiated, completed, the excess refund, the expiry refund). Exits 0 once every
expected event arrived, 1 otherwise. Development tooling only.
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
import urllib.error
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

from intentd.domain.amounts import format_amount, parse_amount
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
    line = f"{color(event['type'], BOLD)} intent #{intent['id']} [{intent['intent_status']}] "
    kind = event["type"]
    if kind == "intent_funded":
        line += (
            f"{funding.get('status')}: received {funding.get('received')} of "
            f"{funding.get('total')} {symbol}"
        )
        if funding.get("shortfall") not in (None, "0"):
            line += color(f", short {funding['shortfall']}", YELLOW)
        if funding.get("excess") not in (None, "0"):
            line += color(f", excess {funding['excess']} (refunded at initiation)", YELLOW)
        deposit = data.get("deposit")
        if deposit:
            line += color(f"  tx {deposit['tx_hash'][:14]}… on {deposit['chain']}", DIM)
    elif kind == "intent_initiated":
        line += f"prefill sent: {intent['destination_chain']} pays the recipient" + color(
            f"  tx {data['prefill']['tx_hash'][:14]}…", DIM
        )
    elif kind == "intent_completed":
        line += "prefill confirmed: the recipient has the funds; relayer repaid from the deposit"
    elif kind == "intent_expired":
        line += f"expired with nothing to refund (received {funding.get('received')} {symbol})"
    elif kind == "intent_refunded":
        refund = data["refund"]
        line += (
            f"refund ({refund['reason']}): {refund['amount_sent']} of {refund['amount']} sent back"
            f" on {refund['chain']}" + color(f"  tx {refund['tx_hash'][:14]}…", DIM)
        )
    return line


def label(event: dict[str, Any]) -> str:
    """What an event means for the demo's checklist."""
    if event["type"] == "intent_funded":
        return f"funded {event['data']['funding']['status']}"
    if event["type"] == "intent_refunded":
        return f"refunded {event['data']['refund']['reason']}"
    return str(event["type"]).removeprefix("intent_")


def create_key(config: str) -> str:
    """A test API key of the client ``demo`` (recorded first if new) from ``intentd keys
    create`` (printed once, kept in memory only)."""
    intentd = [sys.executable, "-m", "intentd", "--config", config]
    for args in (
        [*intentd, "clients", "create", "demo", "--exist-ok"],
        [*intentd, "keys", "create", "--client", "demo", "--mode", "test"],
    ):
        result = subprocess.run(args, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise SystemExit(f"key creation failed: {result.stderr.strip()}")
    key: str = json.loads(result.stdout)["api_key"]
    return key


def create_intent(api: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /api/v1/intents``; the intent record, or exit with the problem document."""
    request = urllib.request.Request(
        f"{api}/api/v1/intents",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            record: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"intent creation failed: {exc.code} {exc.read().decode()}") from None
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

        api = f"http://{settings.api.host}:{settings.api.port}"
        key = create_key(config)
        common = {
            "recipient": payer.address,
            "refund_address": payer.address,
            "sender": payer.address,
        }
        first = create_intent(
            api,
            key,
            {
                "source_chain": source,
                "destination_chain": destination,
                "tokenIn": usdc,
                "amount": "10",
                "metadata": {"order": "demo-1"},
                **common,
            },
        )
        second = create_intent(
            api,
            key,
            {
                "source_chain": destination,
                "destination_chain": source,
                "tokenIn": NATIVE_TOKEN,
                "amount": "0.01",
                "metadata": {"order": "demo-2"},
                **common,
            },
        )
        third = create_intent(
            api,
            key,
            {
                "source_chain": source,
                "destination_chain": destination,
                "tokenIn": usdc,
                "amount": "3",
                "expires_in": 15,
                "metadata": {"order": "demo-3", "note": "paid in part, left to expire"},
                **common,
            },
        )
        for record in (first, second, third):
            say(
                f"created intent #{record['id']}: pay {record['total_amount_in_asset_token']} "
                f"{record['asset_token_symbol']} on {record['source_chain']} to "
                f"{record['intent_address']} (expires {record['expires_at']})"
            )
        expected = {
            (first["id"], "funded UNDERFUNDED"),
            (first["id"], "funded EXACT"),
            (first["id"], "initiated"),
            (first["id"], "completed"),
            (second["id"], "funded OVERFUNDED"),
            (second["id"], "initiated"),
            (second["id"], "completed"),
            (second["id"], "refunded excess"),
            (third["id"], "funded UNDERFUNDED"),
            (third["id"], "refunded expired"),
        }
        ours = {first["id"], second["id"], third["id"]}

        say(f"paying 4 USDC of 10 to intent #{first['id']} …")
        payer.pay(source, usdc, first["intent_address"], 4_000_000)
        say(f"paying 0.015 ETH (0.01 due) to intent #{second['id']} …")
        payer.pay(destination, NATIVE_TOKEN, second["intent_address"], 15 * 10**15)
        say(f"paying 1 USDC of 3 to intent #{third['id']}, then letting it expire …")
        payer.pay(source, usdc, third["intent_address"], 1_000_000)

        seen: set[tuple[int, str]] = set()
        topped_up = False
        deadline = time.monotonic() + timeout
        while seen != expected and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for record in records:
                    event = json.loads(record.value)
                    intent_id = event["intent"]["id"]
                    if intent_id not in ours:
                        continue
                    stamp = datetime.now().strftime("%H:%M:%S")
                    say(f"{color(stamp, DIM)} {describe(event)}")
                    seen.add((intent_id, label(event)))
            if (first["id"], "funded UNDERFUNDED") in seen and not topped_up:
                topped_up = True
                due = parse_amount(first["total_amount_in_asset_token"], 6)
                missing = format_amount(due - 4_000_000, 6)
                say(f"topping up intent #{first['id']} with the missing {missing} USDC …")
                payer.pay(source, usdc, first["intent_address"], due - 4_000_000)
        if seen != expected:
            say(f"missing events: {sorted(expected - seen)}; daemon log: {log_path}")
            return 1
        say(color("every intent went through its lifecycle as expected", GREEN))
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
    parser.add_argument("--timeout", type=float, default=150.0)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(demo(args.config, args.timeout)))


if __name__ == "__main__":
    main()
