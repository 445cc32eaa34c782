"""The demo as the merchant: its API key and intents, its console link, its webhooks.

Guarantees: a key is made with ``intentd clients create demo --exist-ok`` and ``intentd
keys create`` (printed once by the CLI, kept in memory only); intent creation retries
only a 503 with ``Retry-After`` (the API's view of the float is loading), for 60 s at
most; any other problem ends the demo with it; the console link is a one-time sign-in link of the
demo owner (created on the first run, renewed after); :func:`all_signed` says whether
every event of the demo's intents reached the merchant with a valid signature.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from intentd_dev.demo_output import BOLD, DIM, GREEN, color, say
from intentd_dev.webhook_receiver import Receiver, wait_signed

__all__ = ["DEMO_OWNER", "all_signed", "create_intent", "create_key", "show_console"]

DEMO_OWNER = "owner@demo.example"


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
