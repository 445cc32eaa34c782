"""Benchmark: the console's overview and payments pages on 10^6 intents.

``python -m bench console-pages [--intents N] [--clients C] [--rounds R]`` creates a
database of its own, migrates it (the console's indexes are migration 0017's), loads
N intents as ``bench/intent_list.py`` does (60 % of one busy client's, statuses in
realistic shares) but ending now, the ended ones ending a minute after their creation
(``terminal_at``, spread over the last month as a real log would be), and serves the
API with the console in this process (uvicorn on loopback). A console user of the busy
client signs in; then, R times each, as its browser would ask:

- ``GET /console/api/overview`` (volume today and over 30 days by chain and token,
  counts by status, the payments needing attention), after a first call that sums the
  29 settled days into the day cache (timed apart, ``overview_first_call_ms``);
- ``GET /console/api/payments``: the first page (50) with no filter, a status filter, a
  rare funding status, a day's window, and a page from a cursor in the middle;
- ``GET /console/api/payments/{id}``: a payment's detail.

Server time, p50/p99/max in ms, as JSON: from the request reaching the app (under
uvicorn, with every middleware of the API and the console) to its last byte handed
to the server, measured by a wrapper around the app; the client's own figure over
loopback is given too (``client_p50_ms``; aiohttp's keep-alive adds about 40 ms of
delayed ACK to small answers on this machine, which a browser does not). The
database is dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import asyncpg
import uvicorn

from bench.intent_list import _LOAD, BATCH, BUSY, CONFIG, figures
from intentd.access import passwords
from intentd.access.roles import Role
from intentd.adapters.postgres import Connection, console_users, create_pool, migrate
from intentd.adapters.postgres.intent_list import ListPosition
from intentd.api.intents.list_params import encode_list_cursor
from intentd.api.server import Server, bind
from intentd.composition.api import api_app
from intentd.console.mount import console_extensions
from intentd.settings import Settings, load_settings

PASSWORD = "benchmark console passphrase"
_TOKEN = "'0x036cbd53842c5426634e7929541ec2318f3dcf7e'"
_CONSOLE_LOAD = (
    _LOAD.replace(
        "expires_at, created_at, created_tx)",
        "expires_at, created_at, created_tx, total_in_usd, terminal_at)",
    )
    .replace(
        "    $4::bigint + n\nFROM",
        "    $4::bigint + n, 10,\n"
        "    CASE WHEN h % 100 < 93 OR h % 100 = 98 THEN $3::timestamptz"
        " + make_interval(secs => n * 2.6 + 60) END\nFROM",
    )
    .replace("'0x', '0x', 6, 'USDC'", f"{_TOKEN}, {_TOKEN}, 6, 'USDC'")
    .replace("39, '0'), '0x',", "39, '0'), '0xc' || lpad(to_hex(n % 97), 39, '0'),")
)
"""bench/intent_list.py's load, ending now with ``terminal_at`` and USD figures, and
with token and refund addresses the console renders (checksummed)."""


async def load(conn: Connection, intents: int, clients: int) -> float:
    others = [uuid.uuid4() for _ in range(clients - 1)]
    start = datetime.now(UTC) - timedelta(seconds=intents * 2.6 + 120)
    base = int(await conn.fetchval("SELECT pg_current_xact_id()::text::bigint")) - intents - 1
    began = time.perf_counter()
    for first in range(1, intents + 1, BATCH):
        last = min(first + BATCH - 1, intents)
        await conn.execute(_CONSOLE_LOAD, BUSY, others, start, base, first, last)
    await conn.execute("VACUUM ANALYZE intents")
    return time.perf_counter() - began


class ServerTime:
    """ASGI wrapper: the time of the last request, from its start to its last body."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last = 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()

        async def timed(message: Any) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.last = (time.perf_counter() - began) * 1000
            await send(message)

        await self.app(scope, receive, timed)


SERVER = ServerTime(None)


async def serve(settings: Settings, pool: Any) -> AsyncIterator[str]:
    sock = bind("127.0.0.1", 0)
    SERVER.app = api_app(settings, pool=pool, extensions=console_extensions(settings))
    config = uvicorn.Config(
        SERVER,
        http="httptools",
        lifespan="on",
        access_log=False,
        log_config=None,
    )
    server = Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def timed(http: aiohttp.ClientSession, url: str, rounds: int) -> tuple[dict[str, Any], Any]:
    spent, seen = [], []
    body: Any = None
    for _ in range(rounds):
        began = time.perf_counter()
        async with http.get(url) as answer:
            body = await answer.json()
            assert answer.status == 200, body
        seen.append((time.perf_counter() - began) * 1000)
        spent.append(SERVER.last)
    return {**figures(spent), "client_p50_ms": figures(seen)["p50_ms"]}, body


async def measure(base: str, rounds: int, mid_cursor: str) -> dict[str, Any]:
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        async with http.post(
            f"{base}/console/api/signin", json={"email": "owner@busy.example", "password": PASSWORD}
        ) as answer:
            assert answer.status == 200, await answer.text()
        api = f"{base}/console/api"
        async with http.get(f"{api}/overview?mode=test") as answer:
            assert answer.status == 200, await answer.text()
        result: dict[str, Any] = {"overview_first_call_ms": round(SERVER.last, 1)}
        overview, body = await timed(http, f"{api}/overview?mode=test", rounds)
        result["overview"] = {
            **overview,
            "completed_30_days": body["days30"],
            "attention": len(body["attention"]),
        }
        day = (datetime.now(UTC) - timedelta(days=10)).replace(microsecond=0)
        cases = {
            "payments_first_page": "",
            "payments_status_pending": "&status=PENDING",
            "payments_funding_overfunded": "&funding_status=OVERFUNDED",
            "payments_one_day_window": f"&created_after={day:%Y-%m-%dT%H:%M:%SZ}"
            f"&created_before={day + timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}",
            "payments_from_a_cursor": f"&cursor={mid_cursor}",
        }
        for label, query in cases.items():
            result[label], page = await timed(http, f"{api}/payments?mode=test{query}", rounds)
            result[label]["rows"] = len(page["data"])
        intent = page["data"][0]["id"]
        result["payment_detail"], _ = await timed(
            http, f"{api}/payments/{intent}?mode=test", rounds
        )
    return result


async def main_async(intents: int, clients: int, rounds: int) -> dict[str, Any]:
    settings = load_settings(CONFIG)
    base = settings.database.url.get_secret_value().rpartition("/")[0]
    name = f"intentd_bench_console_{secrets.token_hex(3)}"
    admin = await asyncpg.connect(base + "/postgres")
    await admin.execute(f'CREATE DATABASE "{name}"')
    result: dict[str, Any] = {"intents": intents, "clients": clients, "rounds": rounds}
    try:
        url = f"{base}/{name}"
        pool = await create_pool(url, max_size=8)
        try:
            await migrate(pool)
            async with pool.acquire() as conn:
                result["load_seconds"] = round(await load(conn, intents, clients), 1)
                await conn.execute("INSERT INTO clients (id, name) VALUES ($1, 'busy')", BUSY)
                user = await console_users.create(conn, BUSY, "owner@busy.example", Role.OWNER)
                await console_users.set_password(conn, user.id, passwords.hash_password(PASSWORD))
                result["busy_client_intents"] = await conn.fetchval(
                    "SELECT count(*) FROM intents WHERE client_id = $1", BUSY
                )
                # a position in the older half (a cursor holds no negative number: the
                # load numbers created_tx below the database's transaction ids)
                middle = await conn.fetchrow(
                    "SELECT created_tx, id FROM intents WHERE client_id = $1"
                    " AND created_tx >= 0 ORDER BY created_tx, id LIMIT 1",
                    BUSY,
                )
            cursor = encode_list_cursor(ListPosition(middle["created_tx"], middle["id"]))
            os.environ["INTENTD__DATABASE__URL"] = url
            os.environ["INTENTD__CONSOLE__SECURE_COOKIES"] = "false"
            served = load_settings(CONFIG)
            async for api in serve(served, pool):
                result.update(await measure(api, rounds, cursor))
        finally:
            await pool.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    return result


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--intents", type=int, default=1_000_000)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args(argv)
    result = asyncio.run(main_async(args.intents, args.clients, args.rounds))
    print(json.dumps(result, indent=2))
