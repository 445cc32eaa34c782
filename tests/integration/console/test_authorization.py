"""Every role against every console operation, and every key scope against every API
operation: allowed means anything but 403 (the tests send made-up ids, so an allowed
call finds nothing and changes nothing); refused means 403 with the precise code,
and a refused change is in the audit log."""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from fastapi.routing import APIRoute
from tests.integration.api.conftest import Api, MakeKey, named_client
from tests.integration.console.conftest import Browser, Team, signed_in

from intentd.access.roles import Permission, Role, allowed
from intentd.access.scopes import Scope, required_scope, scope_allows
from intentd.adapters.postgres import Pool, api_keys
from intentd.api.app import create_app
from intentd.console.auth import Require
from intentd.console.mount import console_extensions
from intentd.credentials import generate_key
from intentd.settings import Settings

pytestmark = pytest.mark.integration

SELF_SERVICE = {
    ("POST", "/console/api/signin"),
    ("POST", "/console/api/signin/second-factor"),
    ("POST", "/console/api/signin/link"),
    ("POST", "/console/api/signout"),
    ("GET", "/console/api/session"),
    ("POST", "/console/api/me/password"),
    ("POST", "/console/api/me/totp/start"),
    ("POST", "/console/api/me/totp/confirm"),
    ("POST", "/console/api/me/totp/off"),
}
"""Console operations of every signed-in user on their own account (or before sign-in)."""

_PARAMS = {
    "intent_id": "999999999",
    "approval_id": str(uuid.UUID(int=1)),
    "endpoint_id": str(uuid.UUID(int=2)),
    "delivery_id": "1",
    "user_id": str(uuid.UUID(int=3)),
    "key_id": str(uuid.UUID(int=4)),
    "intent_address": "0x" + "11" * 20,
    "sender": "0x" + "22" * 20,
    "chain": "BASE_TESTNET",
    "export": "payments",
}


def flat_routes(routes: Iterable[Any]) -> Iterator[Any]:
    """The app's routes, through the routers it included (FastAPI keeps them lazily)."""
    for route in routes:
        original = getattr(route, "original_router", None)
        if original is not None:
            yield from flat_routes(original.routes)
        else:
            yield route


def _path(template: str) -> str:
    return re.sub(r"\{(\w+)(:\w+)?\}", lambda m: _PARAMS[m.group(1)], template)


def console_operations(settings: Settings) -> list[tuple[str, str, Permission]]:
    app = create_app(settings, extensions=console_extensions(settings))
    found = []
    for route in flat_routes(app.routes):
        if not isinstance(route, APIRoute) or not route.path.startswith("/console/api"):
            continue
        needs = [
            d.call.permission for d in route.dependant.dependencies if isinstance(d.call, Require)
        ]
        for method in route.methods or ():
            if (method, route.path) in SELF_SERVICE:
                assert not needs
                continue
            assert len(needs) == 1, f"{method} {route.path} names no permission"
            found.append((method, route.path, needs[0]))
    return found


def api_operations(settings: Settings) -> list[tuple[str, str]]:
    app = create_app(settings)
    found = []
    for route in flat_routes(app.routes):
        if not isinstance(route, APIRoute):
            continue
        callers = {d.call.__name__ for d in route.dependant.dependencies}
        if "_api_caller" in callers:
            found += [(method, route.path) for method in route.methods or ()]
    return found


async def test_every_role_against_every_console_operation(
    console_api: Api, browsers: Callable[[], Browser], team: Team, pool: Pool
) -> None:
    operations = console_operations(console_api.settings)
    assert len(operations) >= 30
    assert {p for _, _, p in operations} == set(Permission)  # each permission guards something
    for role in Role:
        browser = await signed_in(browsers, team.emails[role])
        for method, template, permission in operations:
            status, body = await browser.call(
                method, _path(template).removeprefix("/console/api"), params={"mode": "test"}
            )
            refused = (
                status == 403
                and isinstance(body, dict)
                and body.get("code") == "forbidden_for_role"
            )
            assert refused is not allowed(role, permission), (role, method, template, status, body)
    denied = await pool.fetchval(
        "SELECT count(*) FROM audit_log WHERE client_id = $1 AND result = 'denied'", team.client_id
    )
    changes = [
        (role, op)
        for role in Role
        for op in operations
        if op[0] != "GET" and not allowed(role, op[2])
    ]
    assert denied == len(changes)
    viewer_changes = [op for op in operations if op[0] != "GET"]
    assert all(not allowed(Role.VIEWER, p) for _, _, p in viewer_changes)  # every change refused


async def test_every_scope_against_every_api_operation(
    console_api: Api, pool: Pool, make_key: MakeKey
) -> None:
    operations = api_operations(console_api.settings)
    assert len(operations) >= 30
    unlisted = [op for op in operations if required_scope(*op) is None]
    assert unlisted == [], "every API operation names its scope (access/scopes.py)"
    client = f"scopes-{secrets.token_hex(3)}"
    keys: dict[str | None, str] = {None: await make_key("test", client=client)}
    async with pool.acquire() as conn:
        owner = await named_client(conn, client)
        for scope in Scope:
            new = generate_key("test")
            await api_keys.insert_key(
                conn, new, client=owner, mode="test", rate_limit=None, scopes=frozenset({scope})
            )
            keys[scope.value] = new.key
    for holder, key in keys.items():
        scopes = None if holder is None else {holder}
        for method, template in operations:
            status, body, response = await console_api.call(
                method, _path(template).removeprefix("/api/v1"), key, body={}
            )
            need = required_scope(method, template)
            refused = status == 403 and body.get("code") == "insufficient_scope"
            assert refused is not scope_allows(scopes, need), (
                holder,
                method,
                template,
                status,
                body,
            )
            if refused:
                assert "insufficient_scope" in response.headers["WWW-Authenticate"]
                assert str(need) in body["detail"]
