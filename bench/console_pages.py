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

import asyncio
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp

from bench import intent_list
from bench.cli import options, print_report
from bench.intent_list import _LOAD, BUSY
from bench.scratch import CONFIG, scratch_pool
from bench.timing import figures
from intentd.access import passwords
from intentd.access.roles import Role
from intentd.adapters.postgres import Connection, console_users
from intentd.adapters.postgres.intent_list import ListPosition
from intentd.api.intents.list_params import encode_list_cursor
from intentd.composition.api import api_app
from intentd.console.mount import console_extensions
from intentd.settings import load_settings
from intentd_dev.asgi_server import served

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
    """bench/intent_list.py's load with :data:`_CONSOLE_LOAD`, ending now."""
    start = datetime.now(UTC) - timedelta(seconds=intents * 2.6 + 120)
    return await intent_list.load(conn, intents, clients, statement=_CONSOLE_LOAD, start=start)


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


async def timed_get(
    http: aiohttp.ClientSession, url: str, rounds: int
) -> tuple[dict[str, Any], Any]:
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
        overview, body = await timed_get(http, f"{api}/overview?mode=test", rounds)
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
            result[label], page = await timed_get(http, f"{api}/payments?mode=test{query}", rounds)
            result[label]["rows"] = len(page["data"])
        intent = page["data"][0]["id"]
        result["payment_detail"], _ = await timed_get(
            http, f"{api}/payments/{intent}?mode=test", rounds
        )
    return result


async def main_async(intents: int, clients: int, rounds: int) -> dict[str, Any]:
    result: dict[str, Any] = {"intents": intents, "clients": clients, "rounds": rounds}
    async with scratch_pool("console", max_size=8) as (url, pool):
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
        settings = load_settings(CONFIG)
        SERVER.app = api_app(settings, pool=pool, extensions=console_extensions(settings))
        async with served(SERVER) as api:
            result.update(await measure(api, rounds, cursor))
    return result


def run(argv: list[str]) -> None:
    args = options(argv, __doc__, intents=1_000_000, clients=100, rounds=200)
    print_report(asyncio.run(main_async(args.intents, args.clients, args.rounds)))
