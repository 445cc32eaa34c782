"""The API while PostgreSQL is away (issue 18, section 0): 503s, never 500s.

The app opens its own pool through a :class:`TcpFaultProxy` in front of the real
PostgreSQL. While the proxy is cut (every connection reset, new ones refused) or
stalled (connections open, nothing forwarded), every route that needs the database
answers 503 ``database_unavailable`` with ``Retry-After``: the hot path, the key
lookup, sessions, the SDK aliases, trigger-processing, the webhook routes. The app
says it is not ready, logs the outage in two lines (its start, its end: the
process's one outage log, ``supervision.outage_log``) and nothing with a traceback.
Once the proxy passes traffic again, the same app is ready and answers 2xx by itself.
A create that was committed although its answer was a 503 (the connection broke after
the server took the statement) is found again by its ``Idempotency-Key``: exactly
one intent.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import structlog
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve

from intentd.adapters.postgres import Pool
from intentd.settings import Settings
from intentd_dev.fault_proxy import TcpFaultProxy, proxy_for, through_proxy

pytestmark = pytest.mark.integration

PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
SENDER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
ANSWER_TIMEOUT = 1.0
"""``api.db_timeout`` of these tests: how long a request waits for a stalled server."""
RECOVERY_SECONDS = 30.0


@pytest.fixture
async def proxy(database_url: str) -> AsyncIterator[TcpFaultProxy]:
    async with proxy_for(database_url, 5432) as instance:
        yield instance


def outage_settings(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    url: str,
    max_pool: int = 4,
    **api: Any,
) -> Settings:
    sections = api_sections(infra)
    sections["api"] = {
        **sections["api"],
        "key_cache_ttl": 300,  # a key used once stays verified for the whole test
        "db_acquire_timeout": 1.0,
        "db_timeout": ANSWER_TIMEOUT,
        **api,
    }
    return make_settings(database={"url": url, "min_pool": 1, "max_pool": max_pool}, **sections)


@dataclass
class OutageApi(Api):
    readiness: list[bool]
    """What the app said of its readiness, in order."""


@pytest.fixture
async def outage_api(
    *,
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    database_url: str,
    proxy: TcpFaultProxy,
    http: aiohttp.ClientSession,
    request: pytest.FixtureRequest,
) -> AsyncIterator[OutageApi]:
    max_pool = getattr(request, "param", 4)
    settings = outage_settings(infra, make_settings, through_proxy(database_url, proxy), max_pool)
    readiness: list[bool] = []
    # the app's own pool, through the proxy
    async for url in serve(settings, None, on_readiness=readiness.append):
        yield OutageApi(url, settings, http, readiness)


@pytest.fixture
def library_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The standard library's records (uvicorn, asyncpg), from warnings up."""
    caplog.set_level("WARNING")
    return caplog


def assert_quiet_outage(
    logs: list[dict[str, Any]], library: pytest.LogCaptureFixture, outages: int = 1
) -> None:
    """The outage in a start line and an end line, no traceback, no 500."""
    events = [entry["event"] for entry in logs]
    told = [entry["event"] for entry in logs if entry.get("dependency") == "postgresql"]
    assert told.count("dependency unavailable") == outages, events
    assert told.count("dependency available again") == outages, events
    assert "unhandled error" not in events
    assert not [entry for entry in logs if "traceback" in entry or "exc_info" in entry]
    noisy = [(r.name, r.getMessage()) for r in library.records if r.exc_info or r.exc_text]
    assert not noisy, noisy


def usdc(api: Api, chain: str) -> str:
    return next(t.address for t in api.settings.chains[chain].tokens if t.symbol == "USDC")


def intent_body(api: Api) -> dict[str, Any]:
    return {
        "amount": "3",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "source_chain": "BASE_TESTNET",
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": PAYEE,
        "refund_address": PAYEE,
        "sender": SENDER,
    }


@dataclass
class World:
    """What the routes are called with: made while the database was there."""

    key: str
    """Verified once: cached, so its requests reach the route's own database work."""
    fresh_key: str
    """Never used: its first request must look it up."""
    intent: dict[str, Any]
    session_token: str
    """Used once (cached); ``session_intent`` was created in it."""
    fresh_session_token: str
    session_intent: dict[str, Any]


async def world(api: Api, make_key: MakeKey) -> World:
    client = f"outage-{secrets.token_hex(4)}"
    key = await make_key("test", client=client)
    fresh_key = await make_key("test", client=client)
    status, intent, _ = await api.call("POST", "/intents", key, body=intent_body(api))
    assert status == 201, intent
    session_body = {
        "recipient": PAYEE,
        "amount": "5",
        "destinationChain": "ARBITRUM_TESTNET",
        "token": usdc(api, "ARBITRUM_TESTNET"),
    }
    status, session, _ = await api.call("POST", "/sessions", key, body=session_body)
    assert status == 201, session
    other_key = await make_key("test", client=client)
    status, other, _ = await api.call("POST", "/sessions", other_key, body=session_body)
    assert status == 201, other
    choice = {
        "source_chain": "BASE_TESTNET",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "refund_address": PAYEE,
    }
    token = session["session_token"]
    status, session_intent, _ = await api.call("POST", "/session/intents", token, body=choice)
    assert status == 201, session_intent
    return World(key, fresh_key, intent, token, other["session_token"], session_intent)


def routes(api: Api, w: World) -> list[tuple[str, str, str, Any, dict[str, str]]]:
    """(method, path, credentials, body, headers) of every kind of route that needs
    the database."""
    address = w.intent["intent_address"]
    session_address = w.session_intent["intent_address"]
    create = {"Idempotency-Key": f"outage-{secrets.token_hex(6)}"}
    choice = {
        "source_chain": "BASE_TESTNET",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "refund_address": PAYEE,
    }
    return [
        # the hot path
        ("POST", "/intents", w.key, intent_body(api), create),
        ("GET", f"/intents/{w.intent['id']}", w.key, None, {}),
        ("GET", f"/intents/by-address/{address}", w.key, None, {}),
        # the key lookup, a session token's lookup
        ("GET", "/chains", w.fresh_key, None, {}),
        ("GET", "/session", w.fresh_session_token, None, {}),
        # FastAPI routes
        ("GET", "/intents", w.key, None, {}),
        ("GET", "/events", w.key, None, {}),
        ("GET", f"/intents/{w.intent['id']}/events", w.key, None, {}),
        ("POST", f"/intents/{address}/cancel", w.key, None, {}),
        ("POST", f"/intents/{address}/trigger-processing", w.key, None, {}),
        # sessions
        ("POST", "/session/intents", w.session_token, choice, {}),
        ("GET", f"/session/intents/{session_address}", w.session_token, None, {}),
        ("POST", f"/session/intents/{session_address}/payment-made", w.session_token, None, {}),
        # the Chainrails SDK's aliases
        ("GET", f"/intents/address/{address}", w.key, None, {}),
        ("GET", f"/intents/user/{SENDER}", w.key, None, {}),
        ("POST", "/modal/sessions/intents", w.session_token, choice, {}),
        ("GET", f"/modal/sessions/intents/{session_address}", w.session_token, None, {}),
        ("POST", f"/modal/sessions/intents/{session_address}/process", w.session_token, None, {}),
        # webhook management
        ("GET", "/webhooks", w.key, None, {}),
        ("POST", "/webhooks", w.key, {"url": "https://93.184.216.34/hook"}, {}),
    ]


async def call_all(
    api: Api, w: World
) -> list[tuple[str, int, dict[str, Any], aiohttp.ClientResponse, float]]:
    async def one(
        method: str, path: str, key: str, body: Any, headers: dict[str, str]
    ) -> tuple[str, int, dict[str, Any], aiohttp.ClientResponse, float]:
        started = time.monotonic()
        status, data, response = await api.call(method, path, key, body=body, headers=headers)
        return f"{method} {path}", status, data, response, time.monotonic() - started

    return await asyncio.gather(*(one(*route) for route in routes(api, w)))


def assert_all_unavailable(
    answers: list[tuple[str, int, dict[str, Any], aiohttp.ClientResponse, float]],
) -> None:
    wrong = [
        (route, status, data.get("code"), response.headers.get("Retry-After"))
        for route, status, data, response, _ in answers
        if status != 503
        or data.get("code") != "database_unavailable"
        or not response.headers.get("Retry-After", "").isdigit()
    ]
    assert not wrong, wrong


async def until_readiness(api: OutageApi, ready: bool) -> None:
    deadline = time.monotonic() + RECOVERY_SECONDS
    while api.readiness[-1] is not ready:
        assert time.monotonic() < deadline, f"the app did not say ready={ready}"
        await asyncio.sleep(0.05)


async def until_ready(api: OutageApi) -> None:
    await until_readiness(api, True)


async def until_served(api: Api, w: World) -> None:
    """Until a read that needs the database answers 200 again (bounded)."""
    deadline = time.monotonic() + RECOVERY_SECONDS
    while True:
        status, data, _ = await api.call("GET", f"/intents/{w.intent['id']}", w.key)
        if status == 200:
            return
        assert status == 503, data
        assert time.monotonic() < deadline, "the API did not recover"
        await asyncio.sleep(0.1)


async def served_world(api: OutageApi, make_key: MakeKey) -> World:
    """:func:`world`, its session read once before any outage."""
    w = await world(api, make_key)
    status, _, _ = await api.call("GET", "/session", w.session_token)
    assert status == 200
    return w


async def recovered(api: OutageApi, proxy: TcpFaultProxy, w: World) -> None:
    """End the outage; until the app says it is ready and serves a read again."""
    await proxy.restore()
    await until_ready(api)
    await until_served(api, w)


async def test_a_cut_database_is_a_503_on_every_route_then_the_api_recovers(
    outage_api: OutageApi,
    proxy: TcpFaultProxy,
    make_key: MakeKey,
    library_logs: pytest.LogCaptureFixture,
) -> None:
    api = outage_api
    w = await served_world(api, make_key)
    assert api.readiness == [True]

    with structlog.testing.capture_logs() as logs:
        await proxy.cut()
        answers = await call_all(api, w)
        assert_all_unavailable(answers)
        await until_readiness(api, False)
        assert api.readiness == [True, False]
        status, _, _ = await api.call("GET", "/chains", w.key)
        assert status == 200, "a route without the database still answers"

        await recovered(api, proxy, w)
        for route, status, data, _, _ in await call_all(api, w):
            assert status < 500, (route, status, data)
    assert api.readiness == [True, False, True]
    assert_quiet_outage(logs, library_logs)


async def test_a_stalled_database_is_a_503_within_the_bound_on_every_route(
    outage_api: OutageApi,
    proxy: TcpFaultProxy,
    make_key: MakeKey,
    library_logs: pytest.LogCaptureFixture,
) -> None:
    api = outage_api
    w = await served_world(api, make_key)

    with structlog.testing.capture_logs() as logs:
        proxy.stall()
        answers = await call_all(api, w)
        assert_all_unavailable(answers)
        bound = ANSWER_TIMEOUT + api.settings.api.db_acquire_timeout + 2.0
        slow = [(route, round(took, 2)) for route, _, _, _, took in answers if took > bound]
        assert not slow, slow
        await until_readiness(api, False)

        await recovered(api, proxy, w)
    assert_quiet_outage(logs, library_logs)


async def until(check: Callable[[], Any], what: str, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("outage_api", [1], indirect=True)  # one connection: one plan cache
@pytest.mark.parametrize(
    "fault", ["cut", "stall, retried after the first ended", "stall, retried while the first waits"]
)
async def test_a_create_answered_503_is_one_intent_when_retried(
    outage_api: OutageApi, proxy: TcpFaultProxy, make_key: MakeKey, pool: Pool, fault: str
) -> None:
    """The create's INSERT reaches the server and waits there (on a table lock the test
    holds), then the link fails; the client is answered 503 either way. The create is
    one transaction (the client's open-intent lock, the count, the INSERT, the
    commit), so the server never commits what it did not hear the end of:

    - cut: the connection is reset, the server rolls the transaction back; the retry
      creates the intent.
    - stall: once the table lock goes the INSERT is done, but the commit never comes;
      the server ends the transaction after ``api.db_timeout`` idle (it held the
      client's lock: creates would wait for TCP to give up, hours later) and rolls it
      back. A retry after that creates the intent; a retry while the test's table lock
      is held waits behind it (and behind the first, if the server has not yet seen it
      go), then creates it.

    Each time: 201 for the retry, and exactly one intent with the key."""
    api = outage_api
    key = await make_key("test", client=f"retry-{secrets.token_hex(4)}")
    warm = {"Idempotency-Key": f"warm-{secrets.token_hex(6)}"}
    status, _, _ = await api.call("POST", "/intents", key, body=intent_body(api), headers=warm)
    assert status == 201  # the key is cached, the INSERT prepared
    idempotency = f"retry-{secrets.token_hex(6)}"
    body, headers = intent_body(api), {"Idempotency-Key": idempotency}

    def create() -> asyncio.Future[tuple[int, Any, aiohttp.ClientResponse]]:
        return asyncio.ensure_future(api.call("POST", "/intents", key, body=body, headers=headers))

    async def waiting_inserts() -> int:
        count: int = await pool.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO intents%'"
        )
        return count

    async def waiting_creates() -> int:
        """Creates waiting on a lock: the table lock (INSERT), or the client's."""
        count: int = await pool.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND (query LIKE '%INSERT INTO intents%'"
            " OR query LIKE '%pg_advisory_xact_lock%')"
        )
        return count

    async def open_creates() -> int:
        """Creates whose transaction is open: waiting, or idle for their commit."""
        count: int = await pool.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_xid IS NOT NULL AND query LIKE '%INSERT INTO intents%'"
        )
        return count

    async def stored() -> list[int]:
        rows = await pool.fetch("SELECT id FROM intents WHERE idempotency_key = $1", idempotency)
        return [row["id"] for row in rows]

    retry = None
    async with pool.acquire() as blocker, blocker.transaction():
        await blocker.execute("LOCK TABLE intents IN SHARE MODE")
        first = create()
        await until(lambda: _equal(waiting_inserts(), 1), "the insert did not reach the server")
        if fault == "cut":
            await proxy.cut()
        else:
            proxy.stall()
        status, problem, response = await first
        assert (status, problem["code"]) == (503, "database_unavailable"), problem
        assert response.headers["Retry-After"].isdigit()
        if fault == "stall, retried while the first waits":
            await proxy.restore()
            await until_ready(api)
            retry = create()
            await until(lambda: _at_least(waiting_creates(), 1), "the retry did not wait")
    if fault == "stall, retried after the first ended":
        await until(lambda: _equal(open_creates(), 0), "the stalled create was not ended")
        assert await stored() == []  # rolled back: its commit never reached the server
    await until(lambda: _equal(waiting_inserts(), 0), "the first insert did not end")
    await proxy.restore()
    await until_ready(api)
    if retry is None:
        retry = create()
    status, record, _ = await retry
    assert status == 201, record
    assert await stored() == [record["id"]]


async def _equal(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def _at_least(value: Any, expected: int) -> bool:
    return bool(await value >= expected)
