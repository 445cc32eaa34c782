"""Every route waits a bounded time for a database connection (issue 11, item 10).

A pool whose only connection is held by someone else: each request that needs the
database answers 503 ``database_busy`` with ``Retry-After`` after
``api.db_acquire_timeout``, instead of waiting for as long as the connection is held.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve

from intentd.adapters.postgres import Pool, create_pool
from intentd.settings import Settings

ACQUIRE_TIMEOUT = 0.2
ROUTES = [
    ("GET", "/intents"),
    ("GET", "/intents?status=PENDING"),
    ("GET", "/events"),
    ("GET", "/intents/1"),
    ("GET", "/intents/1/events"),
    ("GET", "/webhooks"),
    ("POST", "/intents/0x000000000000000000000000000000000000dEaD/cancel"),
    ("POST", "/intents/0x000000000000000000000000000000000000dEaD/trigger-processing"),
]


@pytest.fixture
async def one_connection(database_url: str) -> AsyncIterator[Pool]:
    pool = await create_pool(database_url, min_size=1, max_size=1)
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
async def busy_api(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    one_connection: Pool,
    http: aiohttp.ClientSession,
) -> AsyncIterator[Api]:
    sections = api_sections(infra)
    sections["api"] = {
        **sections["api"],
        "key_cache_ttl": 300,
        "db_acquire_timeout": ACQUIRE_TIMEOUT,
    }
    settings = make_settings(**sections)
    async for url in serve(settings, one_connection):
        yield Api(url, settings, http)


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_a_request_without_a_free_connection_is_a_503(
    busy_api: Api, one_connection: Pool, make_key: MakeKey, method: str, path: str
) -> None:
    key = await make_key()
    status, _, _ = await busy_api.call("GET", "/chains", key)  # the key is now cached
    assert status == 200
    async with one_connection.acquire():
        started = time.monotonic()
        status, body, response = await asyncio.wait_for(
            busy_api.call(method, path, key, body={} if method == "POST" else None), 10
        )
        waited = time.monotonic() - started
    assert (status, body["code"]) == (503, "database_busy"), body
    assert response.headers["Retry-After"] == "1"
    assert waited < 5
