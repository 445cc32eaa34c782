"""The API served over real HTTP (uvicorn, in this test process) against the session's
database and the anvil chains of ``make infra-up``."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from fastapi import FastAPI
from tests.conftest import CHAINS, chain_section

from intentd.adapters.postgres import Connection, Pool, api_keys, clients
from intentd.adapters.postgres.clients import Client
from intentd.composition.api import api_app
from intentd.credentials import generate_key
from intentd.pricing import PriceSource
from intentd.settings import Settings
from intentd_dev.asgi_server import served

SESSION_SECRET = "test-session-secret-" + "x" * 24
TEST_WEBHOOK_KEY = "00" * 32
"""Seals webhook secrets in the API tests (a test value, hex)."""
MAIN_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
MAIN_ETH_FEED = "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70"


def api_sections(infra: dict[str, str], **changes: Any) -> dict[str, Any]:
    """Sections of the API's test settings: the two anvil chains, a main network
    (never read), fees with two bridge options, an ETH price, the session secret."""
    chains = {name: chain_section(infra, name, cid) for name, cid in CHAINS.items()}
    chains["BASE"] = chain_section(
        infra,
        "BASE_TESTNET",
        8453,
        network="main",
        tokens=[
            {
                "address": MAIN_USDC,
                "symbol": "USDC",
                "name": "USD Coin",
                "decimals": 6,
                "category": "stablecoin",
            }
        ],
        # a main network is priced by feeds only (docs/pricing.md); this one is never
        # read (the URL answers another chain id), so ETH on it is price_unavailable
        native={
            "price_feed": {"address": MAIN_ETH_FEED, "heartbeat": 1320, "min": "100", "max": "1e6"}
        },
    )
    sections: dict[str, Any] = {
        "chains": chains,
        "fees": {
            "app_fee_bps": "10",
            "bridges": [
                {"name": "relay", "fixed_usd": "0.10", "bps": "5"},
                {
                    "name": "express",
                    "fixed_usd": "0.50",
                    "routes": ["BASE_TESTNET->ARBITRUM_TESTNET"],
                    "estimated_seconds": 5,
                },
            ],
        },
        "prices": {"ETH": "3000"},
        "session_secret": SESSION_SECRET,
        "webhook_key": TEST_WEBHOOK_KEY,
        # The shared test server sees every test's first requests with new keys from
        # 127.0.0.1: the per-source bucket would throttle the suite, not an attacker.
        # The abuse tests set their own api section (tests/integration/api/test_api_abuse_*).
        # The trigger tests call one intent again at once; the cooldown has its own test.
        "api": {"key_cache_ttl": 0.5, "source_rate_limit": 100_000, "trigger_cooldown": 0},
    }
    sections.update(changes)
    return sections


@dataclass
class Api:
    url: str
    settings: Settings
    http: aiohttp.ClientSession

    async def call(
        self,
        method: str,
        path: str,
        key: str | None,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> tuple[int, Any, aiohttp.ClientResponse]:
        sent = dict(headers or {})
        if key is not None:
            sent["Authorization"] = f"Bearer {key}"
        async with self.http.request(
            method, f"{self.url}/api/v1{path}", json=body, headers=sent, params=params
        ) as response:
            data = await response.json(content_type=None)
            return response.status, data, response


async def serve(
    settings: Settings,
    pool: Pool | None,
    *,
    prices: PriceSource | None = None,
    on_readiness: Callable[[bool], None] | None = None,
    extensions: Sequence[Callable[[FastAPI], None]] = (),
) -> AsyncIterator[str]:
    """Serve the API on a free port (``pool`` None: the app opens its own, from the
    settings' database URL); ``extensions`` as ``api_app`` takes them (the console's)."""
    app = api_app(
        settings, pool=pool, prices=prices, on_readiness=on_readiness, extensions=extensions
    )
    async with served(app) as url:
        yield url


@pytest.fixture(scope="session")
def api_settings(infra: dict[str, str], make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(**api_sections(infra))


@pytest.fixture(scope="session")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture(scope="session")
async def fresh_addresses(pool: Pool) -> None:
    """Start intent addresses at a random index: every test session's database starts
    its sequence at 1, and the anvil chains (with earlier payments to those addresses)
    are shared between sessions."""
    async with pool.acquire() as conn:
        await conn.execute(
            "SELECT setval('intent_address_index_seq', $1)", secrets.randbelow(2**30) + 2**20
        )


@pytest.fixture(scope="session")
async def api(
    api_settings: Settings, pool: Pool, http: aiohttp.ClientSession, fresh_addresses: None
) -> AsyncIterator[Api]:
    async for url in serve(api_settings, pool):
        yield Api(url, api_settings, http)


@pytest.fixture(scope="session")
async def production_api(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
) -> AsyncIterator[Api]:
    settings = make_settings(**api_sections(infra, environment="production"))
    async for url in serve(settings, pool):
        yield Api(url, settings, http)


MakeKey = Callable[..., Awaitable[str]]


async def named_client(conn: Connection, name: str) -> Client:
    """The client named ``name``, recorded first if new, with the id keys had before
    clients were records (``client_id_of(name)``), which tests compute themselves."""
    await conn.execute(
        "INSERT INTO clients (id, name) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        api_keys.client_id_of(name),
        name,
    )
    found = await clients.find(conn, name)
    assert found is not None
    return found


@pytest.fixture(scope="session")
def make_key(pool: Pool) -> MakeKey:
    """``await make_key(mode="test", client=..., rate_limit=None)``: a new key's secret."""

    async def make(
        mode: str = "test", *, client: str | None = None, rate_limit: int | None = None
    ) -> str:
        new = generate_key(mode)  # type: ignore[arg-type]
        async with pool.acquire() as conn:
            await api_keys.insert_key(
                conn,
                new,
                client=await named_client(conn, client or f"client-{secrets.token_hex(4)}"),
                mode=mode,  # type: ignore[arg-type]
                rate_limit=rate_limit,
            )
        return new.key

    return make


@pytest.fixture(scope="session")
async def test_key(make_key: MakeKey) -> str:
    return await make_key("test", client="acme")
