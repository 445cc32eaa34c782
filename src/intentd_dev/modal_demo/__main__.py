"""``python -m intentd_dev.modal_demo``: start ``intentd run`` and the demo shop.

Starts the daemon as a user would (with a session secret made up for this run, if
``INTENTD_SESSION_SECRET`` is not set), creates a test API key with ``intentd keys
create``, builds the shop's React page (``react_shop``), and serves the demo shop on
http://127.0.0.1:8090 (the React page on /react) until Ctrl-C. With
``--api URL --api-key KEY`` it uses a daemon that already runs instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from aiohttp import web

from intentd.settings import load_settings
from intentd_dev.modal_demo.merchant import Shop, merchant_app
from intentd_dev.modal_demo.react_shop import build_react_shop


def _intentd(config: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "intentd", "--config", config, *args]


def _wait_ready(url: str, daemon: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if daemon.poll() is not None:
            raise SystemExit(f"intentd run exited with {daemon.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/pay/config.json", timeout=2):  # noqa: S310 - http URL
                return
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline:
                raise SystemExit(f"intentd did not answer on {url}") from None
            time.sleep(0.3)


def _payer_key_file(env: dict[str, str]) -> str:
    """The dev payer's key file: from the environment, or from what ``make infra-up`` wrote."""
    if "INTENTD_DEV_PAYER_KEY_FILE" in env:
        return env["INTENTD_DEV_PAYER_KEY_FILE"]
    for line in Path(".local/infra.env").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "INTENTD_DEV_PAYER_KEY_FILE":
            return value.strip()
    raise SystemExit("no INTENTD_DEV_PAYER_KEY_FILE: run `make infra-up` first")


async def _serve(shop: Shop, port: int, react: Path | None) -> None:
    runner = web.AppRunner(merchant_app(shop, {"app": react} if react else None))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    print(f"\n  demo shop: http://127.0.0.1:{port}/   (Ctrl-C stops)", flush=True)
    if react is not None:
        print(f"  in React:  http://127.0.0.1:{port}/react", flush=True)
    print(flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m intentd_dev.modal_demo")
    parser.add_argument("--config", default="config/local.toml")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--api", help="a running intentd's URL (default: start intentd run)")
    parser.add_argument("--api-key", help="a test API key of that intentd")
    args = parser.parse_args()
    env = dict(os.environ)
    env.setdefault("INTENTD_SESSION_SECRET", secrets.token_urlsafe(32))
    settings = load_settings(Path(args.config), env)
    payer_key = Path(_payer_key_file(env)).read_text().strip()
    daemon = None
    api_url, api_key = args.api, args.api_key
    if api_url is None:
        api_url = f"http://{settings.api.host}:{settings.api.port}"
        log = Path(".local/modal-demo-daemon.log")
        print(f"starting intentd run (log: {log})", flush=True)
        with log.open("ab") as out:
            daemon = subprocess.Popen(
                _intentd(args.config, "run"), stdout=out, stderr=subprocess.STDOUT, env=env
            )
        _wait_ready(api_url, daemon)
    if api_key is None:
        subprocess.run(
            _intentd(args.config, "clients", "create", "modal-demo", "--exist-ok"),
            capture_output=True,
            env=env,
            check=True,
        )
        created = subprocess.run(
            _intentd(args.config, "keys", "create", "--client", "modal-demo", "--mode", "test"),
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        api_key = str(json.loads(created.stdout)["api_key"])
    shop = Shop(settings=settings, api_url=api_url, api_key=api_key, payer_key=payer_key)
    react = build_react_shop(Path(".local/modal-demo-react"))
    try:
        asyncio.run(_serve(shop, args.port, react))
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
