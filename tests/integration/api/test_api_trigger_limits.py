"""Trigger-processing's limits hold across API processes, and session payers have their own.

Two app instances, each with its own pool, serve one database: what one admitted, the
other sees (issue 18 item 5). ``BASE_TESTNET``'s RPC is a server that accepts and
never answers, so a call for an intent on it keeps running until ``api.trigger_timeout``
(a slot held); ``ARBITRUM_TESTNET``'s is the real anvil (a call ends at once).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from tests.conftest import chain_section
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve

from intentd.adapters.postgres import Pool, create_pool
from intentd.api.connections import Database
from intentd.api.problems import ApiProblem
from intentd.api.trigger_gate import TriggerGate
from intentd.settings import Settings
from intentd_dev.fault_proxy import proxy_for, through_proxy

pytestmark = pytest.mark.integration

PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
HELD, QUICK = "BASE_TESTNET", "ARBITRUM_TESTNET"
TRIGGER_TIMEOUT = 3.0


class SilentNode:
    """Accepts JSON-RPC connections and never answers: a call to it is held."""

    def __init__(self) -> None:
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._hold, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await reader.read()  # until the client hangs up
        writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def until_asked(self, more_than: int) -> None:
        deadline = time.monotonic() + 20
        while self.connections <= more_than:
            assert time.monotonic() < deadline, "the call never reached the node"
            await asyncio.sleep(0.02)


@dataclass
class Pair:
    """Two API processes on one database."""

    a: Api
    b: Api
    node: SilentNode


def limits_settings(
    infra: dict[str, str], make_settings: Callable[..., Settings], node_url: str, **api: Any
) -> Settings:
    sections = api_sections(infra)
    sections["chains"][HELD] = chain_section(infra, HELD, 84532, rpc_urls=[node_url])
    sections["api"] = {**sections["api"], "trigger_timeout": TRIGGER_TIMEOUT, **api}
    return make_settings(**sections)


@pytest.fixture
async def pair(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    http: aiohttp.ClientSession,
    request: pytest.FixtureRequest,
) -> AsyncIterator[Pair]:
    node = SilentNode()
    settings = limits_settings(infra, make_settings, await node.start(), **request.param)
    try:
        async with AsyncExitStack() as stack:
            urls = []
            for _ in range(2):  # each app opens its own pool on the session's database
                served = serve(settings, None)
                urls.append(await anext(served))
                stack.push_async_callback(_finish, served)
            yield Pair(Api(urls[0], settings, http), Api(urls[1], settings, http), node)
    finally:
        await node.close()


async def _finish(served: AsyncIterator[str]) -> None:
    async for _ in served:  # runs the generator's shutdown
        pass


def usdc(api: Api, chain: str) -> str:
    return next(t.address for t in api.settings.chains[chain].tokens if t.symbol == "USDC")


async def new_intent(api: Api, key: str, source: str) -> str:
    destination = QUICK if source == HELD else HELD
    body = {
        "amount": "2",
        "tokenIn": usdc(api, source),
        "source_chain": source,
        "destination_chain": destination,
        "recipient": PAYEE,
        "refund_address": PAYEE,
    }
    status, record, _ = await api.call("POST", "/intents", key, body=body)
    assert status == 201, record
    return str(record["intent_address"])


async def trigger(api: Api, key: str, address: str) -> tuple[int, dict[str, Any], str | None]:
    status, body, response = await api.call("POST", f"/intents/{address}/trigger-processing", key)
    return status, body, response.headers.get("Retry-After")


@pytest.mark.parametrize("pair", [{"trigger_cooldown": 60}], indirect=True)
async def test_the_cooldown_of_an_intent_holds_in_every_process(
    pair: Pair, make_key: MakeKey
) -> None:
    key = await make_key("test", client=f"cool-{secrets.token_hex(4)}")
    address = await new_intent(pair.a, key, QUICK)
    status, body, _ = await trigger(pair.a, key, address)
    assert status == 200, body
    status, body, retry_after = await trigger(pair.b, key, address)
    assert (status, body["code"]) == (429, "trigger_cooldown"), body
    assert retry_after is not None and 1 <= int(retry_after) <= 60
    other = await new_intent(pair.b, key, QUICK)  # another intent is not held up
    status, body, _ = await trigger(pair.b, key, other)
    assert status == 200, body


@pytest.mark.parametrize("pair", [{"trigger_max_per_client": 1}], indirect=True)
async def test_a_client_runs_at_most_its_cap_of_calls_over_every_process(
    pair: Pair, make_key: MakeKey
) -> None:
    key = await make_key("test", client=f"cap-{secrets.token_hex(4)}")
    held, other = await new_intent(pair.a, key, HELD), await new_intent(pair.a, key, QUICK)
    running = asyncio.ensure_future(trigger(pair.a, key, held))
    await pair.node.until_asked(0)
    status, body, retry_after = await trigger(pair.b, key, other)
    assert (status, body["code"]) == (429, "too_many_triggers"), body
    assert retry_after == "1"
    status, body, _ = await running
    assert (status, body["code"]) == (503, "chain_unavailable"), body
    status, body, _ = await trigger(pair.b, key, other)  # the slot was given back
    assert status == 200, body


async def new_session_intents(api: Api, key: str) -> tuple[str, list[str]]:
    """A session of the merchant's key, and two intents its payer created on HELD."""
    session_body = {
        "recipient": PAYEE,
        "amount": "2",
        "destinationChain": QUICK,
        "token": usdc(api, QUICK),
    }
    status, session, _ = await api.call("POST", "/sessions", key, body=session_body)
    assert status == 201, session
    token = session["session_token"]
    choice = {"source_chain": HELD, "tokenIn": usdc(api, HELD), "refund_address": PAYEE}
    created = []
    for _ in range(2):
        status, intent, _ = await api.call("POST", "/session/intents", token, body=choice)
        assert status == 201, intent
        created.append(intent["intent_address"])
    return token, created


@pytest.mark.parametrize("pair", [{"trigger_max_per_client": 1}], indirect=True)
async def test_a_session_payer_has_slots_of_its_own(pair: Pair, make_key: MakeKey) -> None:
    """A payer pressing "I have made payment" through a session never takes the
    merchant's slots: the merchant's own call goes ahead while the payer's runs, and
    the payer's second call waits for its first."""
    key = await make_key("test", client=f"slots-{secrets.token_hex(4)}")
    token, (first, second) = await new_session_intents(pair.a, key)
    merchant = await new_intent(pair.b, key, QUICK)

    payer = asyncio.ensure_future(
        pair.a.call("POST", f"/session/intents/{first}/payment-made", token)
    )
    await pair.node.until_asked(0)
    status, body, _ = await trigger(pair.a, key, merchant)  # the payer's process
    assert status == 200, body
    status, body, _ = await pair.b.call("POST", f"/session/intents/{second}/payment-made", token)
    assert (status, body["code"]) == (429, "too_many_triggers"), body
    status, body, _ = await payer
    assert (status, body["code"]) == (503, "chain_unavailable"), body


async def test_a_slot_left_by_a_process_that_died_expires(pool: Pool) -> None:
    """A process killed during a call never gives its slot back: the slot lapses after
    the call's deadline and a margin (``trigger_timeout`` + 10 s), not never."""
    from intentd.adapters.postgres import trigger_runs  # the shared admission, in SQL

    caller = f"client:{secrets.token_hex(8)}"
    async with pool.acquire() as conn:
        ids = [r["id"] for r in await conn.fetch("SELECT id FROM intents LIMIT 2")]
        assert len(ids) == 2, "the session database has intents by now"
        crashed = await trigger_runs.admit(
            conn, ids[0], caller, cooldown=0, cap=1, lease=TRIGGER_TIMEOUT + 10
        )
        assert crashed.run_id is not None
        refused = await trigger_runs.admit(
            conn, ids[1], caller, cooldown=0, cap=1, lease=TRIGGER_TIMEOUT + 10
        )
        assert (refused.run_id, refused.refused) == (None, "too_many_triggers")
        await conn.execute(
            "UPDATE trigger_runs SET expires_at = now() - interval '1 second' WHERE id = $1",
            crashed.run_id,
        )
        admitted = await trigger_runs.admit(
            conn, ids[1], caller, cooldown=0, cap=1, lease=TRIGGER_TIMEOUT + 10
        )
        assert admitted.run_id is not None
        await trigger_runs.finish(conn, admitted.run_id)


async def test_with_the_database_away_no_call_is_admitted(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    """The admission fails closed: a 503, and the call never starts."""
    async with proxy_for(database_url, 5432) as proxy:
        url = through_proxy(database_url, proxy)
        settings = make_settings(database={"url": url})
        pool = await create_pool(url, min_size=1, max_size=2)
        try:
            gate = TriggerGate(settings, Database.of(settings, pool))
            await proxy.cut()
            started = []
            with pytest.raises(ApiProblem) as refused:
                async with gate.admit(1, "client:anyone"):
                    started.append(True)
            assert (refused.value.status, refused.value.code) == (503, "database_unavailable")
            assert started == []
        finally:
            await proxy.restore()
            await pool.close()
