"""``make demo``: watch intents go through their lifecycle on the local infrastructure.

Starts ``intentd run`` as a user would, creates an API key with ``intentd keys
create``, creates three intents over the HTTP API (``POST /api/v1/intents``) and pays
them from the dev payer account on the anvil chains: the first in test USDC, too
little and then a top-up; the second in native ETH, too much; the third in part, left
to expire. It prints every lifecycle event from Kafka as it arrives (funded,
initiated, completed, the excess refund, the expiry refund). Exits 0 once every
expected event arrived, 1 otherwise. Development tooling only.

The demo is also the merchant: it registers a webhook endpoint (``POST
/api/v1/webhooks``) on a local receiver (``intentd_dev.webhook_receiver``) that verifies
every signature with the ``standardwebhooks`` package (or intentd's own verifier) and
prints each step as the merchant receives it; at the end it checks that every event of
its intents on Kafka also arrived as a signed webhook. The daemon runs with a webhook
key made for this run (``INTENTD_WEBHOOK_KEY``, never printed) and
``webhooks.allow_private_targets = true`` (the receiver is on localhost; development
only). Every setting can be overridden with ``INTENTD__SECTION__KEY`` variables (its
own database, topic prefix, ports, as the tests do).

It ends by printing the merchant console's address and a one-time sign-in link of a
demo owner of the client ``demo`` (``intentd users create``, or ``users link`` when the
owner exists from an earlier run), whose payments are there to see; with ``--stay``
(what ``make demo`` passes) the daemon keeps running for the console until Ctrl-C.
The daemon gets a console key made for this run (``INTENTD_CONSOLE_KEY``: the second
factor can be tried).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
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

from intentd.domain.amounts import format_amount, parse_amount
from intentd.messages import events_topic
from intentd.settings import NATIVE_TOKEN, load_settings
from intentd_dev.demo_payer import Payer
from intentd_dev.webhook_receiver import Receiver, describe_delivery, wait_signed

BOLD, DIM, GREEN, YELLOW, RESET = "\033[1m", "\033[2m", "\033[32m", "\033[33m", "\033[0m"
DEMO_OWNER = "owner@demo.example"


def say(text: str) -> None:
    print(text, flush=True)


def color(text: str, code: str) -> str:
    return f"{code}{text}{RESET}" if sys.stdout.isatty() else text


def stamp() -> str:
    return color(datetime.now().strftime("%H:%M:%S"), DIM)


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
    deadline = time.monotonic() + 60  # a deadline, not 5 tries: a loaded machine is slow
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                record: dict[str, Any] = json.loads(response.read())
                return record
        except urllib.error.HTTPError as exc:
            wait = exc.headers.get("Retry-After")
            if exc.code != 503 or wait is None:  # e.g. the API's view of the float is loading
                raise SystemExit(
                    f"intent creation failed: {exc.code} {exc.read().decode()}"
                ) from None
            time.sleep(min(float(wait), max(0.0, deadline - time.monotonic())))
    raise SystemExit("intent creation failed: the API stayed unavailable for 60 s")


async def wait_until(check: Callable[[], Any], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def console_link(config: str, env: dict[str, str]) -> str:
    """A one-time sign-in link of the demo's owner (made on the first run, renewed later)."""
    intentd = [sys.executable, "-m", "intentd", "--config", config, "users"]
    create = [*intentd, "create", "--client", "demo", "--email", DEMO_OWNER, "--role", "owner"]
    result = subprocess.run(create, capture_output=True, text=True, check=False, env=env)
    if result.returncode == 4 and "exists already" in result.stderr:
        result = subprocess.run(
            [*intentd, "link", DEMO_OWNER], capture_output=True, text=True, check=False, env=env
        )
    if result.returncode != 0:
        raise SystemExit(f"the console's sign-in link failed: {result.stderr.strip()}")
    link: str = json.loads(result.stdout)["signin_link"]
    return link


async def show_console(
    config: str, env: dict[str, str], api: str, daemon: subprocess.Popen[bytes], *, stay: bool
) -> int:
    """Print the console's address and the demo owner's link; with ``stay``, keep the
    daemon running until Ctrl-C. The demo's exit code: 0."""
    link = console_link(config, env)
    say(color(f"merchant console: {api}/console", BOLD))
    say(f"sign in as the demo owner {DEMO_OWNER} (once, choose a password): {link}")
    if stay:
        say(color("the daemon keeps running for the console; Ctrl-C stops it", DIM))
        await stay_up(daemon)
    return 0


async def stay_up(daemon: subprocess.Popen[bytes]) -> None:
    """Keep the daemon running until Ctrl-C (or SIGTERM), or until it exits."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    while not stop.is_set() and daemon.poll() is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)


async def demo(config: str, timeout: float, log_path: Path, *, stay: bool = False) -> int:
    settings = load_settings(Path(config))
    env_file = Path(config).parent / "../.local/infra.env"
    infra = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    chains = list(settings.chains)
    source, destination = chains[0], chains[1 % len(chains)]
    usdc = next(t.address for t in settings.chains[source].tokens if t.symbol == "USDC")
    payer = Payer(settings, infra["INTENTD_DEV_PAYER_KEY_FILE"])

    log_path.parent.mkdir(parents=True, exist_ok=True)
    say(color(f"starting `intentd run` (logs: {log_path})", BOLD))
    env = os.environ.copy()
    env["INTENTD_WEBHOOK_KEY"] = base64.b64encode(os.urandom(32)).decode()  # this run's only
    env["INTENTD_CONSOLE_KEY"] = base64.b64encode(os.urandom(32)).decode()
    env["INTENTD__WEBHOOKS__ALLOW_PRIVATE_TARGETS"] = "true"  # the receiver is on localhost
    with log_path.open("wb") as log_file:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "intentd", "--config", config, "run"],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
        )
    receiver = Receiver(on_event=lambda e: say(f"{stamp()} {color(describe_delivery(e), GREEN)}"))
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="latest",
    )
    try:
        hook_url = await receiver.start()
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
                floats = await conn.fetchval(  # the executors' reading of the relayer
                    "SELECT count(DISTINCT chain) FROM relayer_float WHERE chain = ANY($1)"
                    " AND as_of > now() - make_interval(secs => $2)",
                    chains,
                    settings.liquidity.max_age,
                )
            finally:
                await conn.close()
            return bool(n == len(chains) and floats == len(chains))

        await wait_until(ready, "the daemon to be ready", 60)
        say(color("daemon ready: pollers on " + ", ".join(chains) + ", lifecycle consuming", GREEN))

        api = f"http://{settings.api.host}:{settings.api.port}"
        key = create_key(config)
        endpoint = receiver.register(api, key)  # deleted again by receiver.stop()
        say(
            f"merchant webhook endpoint {endpoint['id']} at {hook_url}: every signature"
            f" verified with {receiver.library}"
        )
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
        event_ids: set[str] = set()
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
                    say(f"{stamp()} {describe(event)}")
                    seen.add((intent_id, label(event)))
                    event_ids.add(event["id"])
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
        signed = await all_signed(receiver, event_ids)
        return await show_console(config, env, api, daemon, stay=stay) if signed else 1
    finally:
        await consumer.stop()
        await receiver.stop()
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
        say(f"daemon stopped (exit code {daemon.returncode})")


async def all_signed(receiver: Receiver, event_ids: set[str]) -> bool:
    """Whether every event of the demo's intents reached the merchant, signed; says so."""
    missing = await wait_signed(receiver, event_ids, 30)
    if missing or receiver.refused:
        say(f"webhooks missing: {sorted(missing)}; refused signatures: {receiver.refused}")
        return False
    say(
        color(
            f"the merchant received all {len(event_ids)} events of its intents as webhooks,"
            f" every signature valid ({receiver.library}; {receiver.duplicates} redeliveries)",
            GREEN,
        )
    )
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/local.toml")
    parser.add_argument("--timeout", type=float, default=150.0)
    parser.add_argument("--log", type=Path, default=Path(".local/run/demo-daemon.log"))
    parser.add_argument(
        "--stay", action="store_true", help="keep the daemon running for the console (Ctrl-C)"
    )
    args = parser.parse_args()
    raise SystemExit(asyncio.run(demo(args.config, args.timeout, args.log, stay=args.stay)))


if __name__ == "__main__":
    main()
