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
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer

from intentd.domain.amounts import format_amount, parse_amount
from intentd.messages import events_topic
from intentd.settings import NATIVE_TOKEN, load_settings
from intentd_dev.demo_merchant import all_signed, create_intent, create_key, show_console
from intentd_dev.demo_output import BOLD, GREEN, color, describe, label, say, stamp
from intentd_dev.demo_payer import Payer
from intentd_dev.webhook_receiver import Receiver, describe_delivery


async def wait_until(check: Callable[[], Any], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


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
