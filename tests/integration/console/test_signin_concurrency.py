"""Sign-in limits under concurrent attempts, over real HTTP on real PostgreSQL: attempts
that arrive together are counted one after the other (the counter's row is locked while
it is read and written) and before their password is checked, so no more than the
limit is ever checked, and the counter holds every one of them.

The API here believes ``X-Forwarded-For`` from 127.0.0.1, so each test is its own
source address and locks nobody else's."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from tests.integration.api.conftest import api_sections, serve
from tests.integration.console.conftest import CONSOLE_KEY, PASSWORD, Team

from intentd.access.roles import Role
from intentd.adapters.postgres import Pool
from intentd.console.mount import console_extensions
from intentd.settings import Settings

pytestmark = pytest.mark.integration
ACCOUNT_LIMIT, SOURCE_LIMIT = 5, 12


@pytest.fixture(scope="module")
async def proxied(
    infra: dict[str, str], make_settings: Callable[..., Settings], pool: Pool
) -> AsyncIterator[str]:
    sections = api_sections(infra)
    sections["api"] = {**sections["api"], "trusted_proxies": ["127.0.0.1/32"]}
    sections["console"] = {
        "secure_cookies": False,
        "signin_failures_per_account": ACCOUNT_LIMIT,
        "signin_failures_per_source": SOURCE_LIMIT,
    }
    sections["console_key"] = CONSOLE_KEY
    settings = make_settings(**sections)
    async for url in serve(settings, pool, extensions=console_extensions(settings)):
        yield url


def new_source() -> str:
    return f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250) + 1}"


async def attempt(url: str, source: str, email: str, password: str) -> tuple[int, str]:
    """One sign-in from a browser of its own (no device cookie)."""
    async with (
        aiohttp.ClientSession() as browser,
        browser.post(
            f"{url}/console/api/signin",
            json={"email": email, "password": password},
            headers={"X-Forwarded-For": source},
        ) as response,
    ):
        body: Any = await response.json(content_type=None)
        return response.status, body.get("code", "") if isinstance(body, dict) else ""


async def counter(pool: Pool, key: str) -> int:
    found: int | None = await pool.fetchval(
        "SELECT failures FROM console_signin_throttle WHERE key = $1", key
    )
    return found or 0


async def test_attempts_on_one_account_at_once_are_checked_no_more_than_its_limit(
    proxied: str, team: Team, pool: Pool
) -> None:
    email = team.emails[Role.VIEWER]
    source = new_source()
    answers = await asyncio.gather(
        *(attempt(proxied, source, email, f"wrong guess {i:02}") for i in range(20))
    )
    tally = Counter(answers)
    # exactly the limit was checked (and failed); the rest refused before any check
    assert tally == {(401, "invalid_credentials"): ACCOUNT_LIMIT, (429, "signin_locked"): 15}
    assert await counter(pool, f"source:{source}") == ACCOUNT_LIMIT  # none lost
    failed = await pool.fetchval(
        "SELECT count(*) FROM audit_log WHERE client_id = $1 AND action = 'user.signin'"
        " AND result = 'failed'",
        team.client_id,
    )
    assert failed == ACCOUNT_LIMIT
    # even the right password, from a new browser, waits for the lock to end
    assert await attempt(proxied, new_source(), email, PASSWORD) == (429, "signin_locked")


async def test_attempts_from_one_source_at_once_are_checked_no_more_than_its_limit(
    proxied: str, team: Team, pool: Pool
) -> None:
    source = new_source()
    emails = [f"nobody-{i}-{secrets.token_hex(3)}@example.test" for i in range(SOURCE_LIMIT + 8)]
    answers = await asyncio.gather(
        *(attempt(proxied, source, email, "wrong guess") for email in emails)
    )
    tally = Counter(answers)
    assert tally == {
        (401, "invalid_credentials"): SOURCE_LIMIT,
        (429, "signin_rate_limited"): 8,
    }
    assert await counter(pool, f"source:{source}") == SOURCE_LIMIT


async def test_a_success_gives_its_attempt_back_to_the_source(
    proxied: str, team: Team, pool: Pool
) -> None:
    """Attempts count before they are checked: the ones that succeed are not failures."""
    source = new_source()
    email = team.emails[Role.SUPPORT]
    answers = await asyncio.gather(
        *(attempt(proxied, source, email, PASSWORD) for _ in range(3)),
        attempt(proxied, source, f"nobody-{secrets.token_hex(3)}@example.test", "wrong guess"),
    )
    assert sorted(status for status, _ in answers) == [200, 200, 200, 401]
    assert await counter(pool, f"source:{source}") == 1
