"""A burst of overview requests cannot take the API's pool, on real PostgreSQL: while
the overview's reads are held up (their table locked by the test), they hold at most
the overview's share of the pool, and a key's request still gets a connection."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve
from tests.integration.console.conftest import CONSOLE_KEY, Browser, Team, signed_in

from intentd.access.roles import Role
from intentd.adapters.postgres import Pool, create_pool
from intentd.console.mount import console_extensions
from intentd.console.state import OVERVIEW_SHARE
from intentd.settings import Settings

pytestmark = pytest.mark.integration
POOL = 8
SHARE = POOL // OVERVIEW_SHARE
BURST = 12


@pytest.fixture(scope="module")
async def small_pool_api(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    database_url: str,
    http: aiohttp.ClientSession,
) -> AsyncIterator[Api]:
    sections = api_sections(infra)
    sections["api"] = {**sections["api"], "db_acquire_timeout": 1.0}
    sections["console"] = {"secure_cookies": False}
    sections["console_key"] = CONSOLE_KEY
    sections["database"] = {"url": database_url, "max_pool": POOL}
    settings = make_settings(**sections)
    own = await create_pool(database_url, max_size=POOL)
    try:
        async for url in serve(settings, own, extensions=console_extensions(settings)):
            yield Api(url, settings, http)
    finally:
        await own.close()


async def waiting_on(pool: Pool, table: str) -> int:
    """Backends of this database waiting for a lock with a statement reading ``table``."""
    found: int = await pool.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'"
        " AND pid <> pg_backend_pid()",
        table,
    )
    return found


async def test_a_burst_of_overviews_holds_at_most_its_share_of_the_pool(
    small_pool_api: Api,
    browsers: Callable[[], Browser],
    team: Team,
    pool: Pool,
    make_key: MakeKey,
) -> None:
    key = await make_key("test", client=team.client_name)
    owner = await signed_in(browsers, team.emails[Role.OWNER])
    owner.url = small_pool_api.url  # the session is in the database: any server knows it
    status, _ = await owner.call("GET", "/overview", params={"mode": "test"})
    assert status == 200  # the day totals are summed once: the burst only reads them

    async with pool.acquire() as blocker, blocker.transaction():
        await blocker.execute("LOCK TABLE console_day_totals IN ACCESS EXCLUSIVE MODE")
        burst = [
            asyncio.create_task(owner.call("GET", "/overview", params={"mode": "test"}))
            for _ in range(BURST)
        ]
        deadline = time.monotonic() + 20
        while await waiting_on(pool, "console_day_totals") < SHARE:
            assert time.monotonic() < deadline, "the overviews never reached their reads"
            await asyncio.sleep(0.05)
        # the overviews hold their share, held up; the rest of the pool serves the API
        status, page, _ = await small_pool_api.call("GET", "/intents", key)
        assert status == 200, page
        assert await waiting_on(pool, "console_day_totals") == SHARE
    answers: list[tuple[int, Any]] = await asyncio.gather(*burst)
    codes = {(status, body.get("code") if status != 200 else None) for status, body in answers}
    # those that waited their turn past db_acquire_timeout were told to retry; none broke
    assert codes <= {(200, None), (503, "database_busy")}, answers
    assert (200, None) in codes
