"""The API with the console, served over real HTTP (uvicorn, in this test process)
against the session's database; users made directly in the database, browsers played
by aiohttp sessions with a cookie jar of their own."""

from __future__ import annotations

import base64
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import aiohttp
import pytest
from tests.integration.api.conftest import (
    Api,
    api_sections,
    fresh_addresses,
    http,
    make_key,
    named_client,
    serve,
)

from intentd.access import passwords
from intentd.access.roles import Role
from intentd.adapters.postgres import Pool, console_users
from intentd.console.mount import console_extensions
from intentd.settings import Settings

__all__ = ["fresh_addresses", "http", "make_key"]

CONSOLE_KEY = base64.b64encode(b"k" * 32).decode()
PASSWORD = "correct horse battery staple"
_HASH = passwords.hash_password(PASSWORD)


@pytest.fixture(scope="session")
def console_settings(infra: dict[str, str], make_settings: Callable[..., Settings]) -> Settings:
    sections = api_sections(infra)
    sections["console"] = {"secure_cookies": False}
    sections["console_key"] = CONSOLE_KEY
    return make_settings(**sections)


@pytest.fixture(scope="session")
async def console_api(
    console_settings: Settings, pool: Pool, http: aiohttp.ClientSession, fresh_addresses: None
) -> AsyncIterator[Api]:
    async for url in serve(console_settings, pool, extensions=console_extensions(console_settings)):
        yield Api(url, console_settings, http)


@dataclass
class Browser:
    """One browser: its own cookie jar; ``csrf`` once signed in."""

    url: str
    session: aiohttp.ClientSession
    csrf: str | None = None
    email: str = ""
    extra_headers: dict[str, str] = field(default_factory=dict)

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        csrf: bool = True,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        sent = {**self.extra_headers, **(headers or {})}
        if csrf and self.csrf and method != "GET" and "X-CSRF-Token" not in sent:
            sent["X-CSRF-Token"] = self.csrf
        if method != "GET" and body is None:
            body = {}
        async with self.session.request(
            method, f"{self.url}/console/api{path}", json=body, params=params, headers=sent
        ) as response:
            text = await response.text()
            try:
                data = await response.json(content_type=None)
            except ValueError:
                data = text
            return response.status, data

    async def sign_in(self, email: str, password: str = PASSWORD) -> tuple[int, Any]:
        status, body = await self.call("POST", "/signin", {"email": email, "password": password})
        if status == 200 and body.get("signed_in"):
            await self.refresh()
        return status, body

    async def refresh(self) -> dict[str, Any]:
        status, body = await self.call("GET", "/session")
        assert status == 200, body
        self.csrf = body["csrf_token"]
        return dict(body)

    def cookie(self, name: str) -> str | None:
        for cookie in self.session.cookie_jar:
            if cookie.key == name:
                return cookie.value
        return None


@pytest.fixture
async def browsers(console_api: Api) -> AsyncIterator[Callable[[], Browser]]:
    opened: list[aiohttp.ClientSession] = []

    def make() -> Browser:
        session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        opened.append(session)
        return Browser(console_api.url, session)

    yield make
    for session in opened:
        await session.close()


@dataclass
class Team:
    client_id: UUID
    client_name: str
    emails: dict[Role, str]


@pytest.fixture
async def team(pool: Pool) -> Team:
    """A client of its own with one user of each role (password :data:`PASSWORD`)."""
    name = f"shop-{secrets.token_hex(4)}"
    emails = {}
    async with pool.acquire() as conn:
        client = await named_client(conn, name)
        for role in Role:
            email = f"{role.value}-{secrets.token_hex(3)}@{name}.example"
            user = await console_users.create(conn, client.id, email, role)
            await console_users.set_password(conn, user.id, _HASH)
            emails[role] = email
    return Team(client.id, name, emails)


async def signed_in(browsers: Callable[[], Browser], email: str) -> Browser:
    browser = browsers()
    status, body = await browser.sign_in(email)
    assert status == 200, body
    browser.email = email
    return browser
