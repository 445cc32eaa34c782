"""A client's caps on webhooks, over real HTTP and PostgreSQL: endpoints per client and
mode (409 ``too_many_webhooks``, also under concurrent creates), and test, redeliver
and recover calls per minute (429 ``webhook_sends_rate_limited`` with
``Retry-After``), shared by every API replica."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve
from tests.integration.api.webhook_support import WEBHOOK_KEY

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.api_keys import client_id_of
from intentd.settings import Settings

pytestmark = pytest.mark.integration
RECEIVER = "http://127.0.0.1:9/hook"
MAX_ENDPOINTS = 3
SENDS_PER_MINUTE = 4


def limited_settings(infra: dict[str, str], make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(
        **api_sections(
            infra,
            webhook_key=WEBHOOK_KEY,
            webhooks={
                "allow_private_targets": True,
                "max_endpoints_per_client": MAX_ENDPOINTS,
                "send_calls_per_minute": SENDS_PER_MINUTE,
            },
        )
    )


@pytest.fixture(scope="module")
async def replicas(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
) -> AsyncIterator[tuple[Api, Api]]:
    """Two API servers on the same database, as two replicas."""
    settings = limited_settings(infra, make_settings)
    async for first in serve(settings, pool):
        async for second in serve(settings, pool):
            yield Api(first, settings, http), Api(second, settings, http)


@pytest.fixture
def client() -> str:
    return f"hooks-limits-{secrets.token_hex(4)}"


@pytest.fixture(autouse=True)
async def forget(pool: Pool, client: str) -> AsyncIterator[None]:
    yield
    async with pool.acquire() as conn:
        await conn.execute(
            "DELETE FROM webhook_endpoints WHERE client_id = $1", client_id_of(client)
        )


async def test_a_client_has_at_most_its_endpoints_per_mode(
    replicas: tuple[Api, Api], make_key: MakeKey, client: str
) -> None:
    api, _ = replicas
    key = await make_key("test", client=client)
    created = []
    for _ in range(MAX_ENDPOINTS):
        status, body, _ = await api.call("POST", "/webhooks", key, body={"url": RECEIVER})
        assert status == 201, body
        created.append(body["id"])
    status, problem, _ = await api.call("POST", "/webhooks", key, body={"url": RECEIVER})
    assert (status, problem["code"]) == (409, "too_many_webhooks")
    assert str(MAX_ENDPOINTS) in problem["detail"]
    # A disabled endpoint still counts; a deleted one does not.
    await api.call("PATCH", f"/webhooks/{created[0]}", key, body={"enabled": False})
    status, _, _ = await api.call("POST", "/webhooks", key, body={"url": RECEIVER})
    assert status == 409
    await api.call("DELETE", f"/webhooks/{created[0]}", key)
    status, _, _ = await api.call("POST", "/webhooks", key, body={"url": RECEIVER})
    assert status == 201
    # The live mode has its own count.
    live = await make_key("live", client=client)
    status, _, _ = await api.call(
        "POST", "/webhooks", live, body={"url": "https://example.com/hook"}
    )
    assert status == 201


async def test_concurrent_creates_on_two_replicas_stop_at_the_cap(
    replicas: tuple[Api, Api], make_key: MakeKey, client: str, pool: Pool
) -> None:
    key = await make_key("test", client=client)
    answers = await asyncio.gather(
        *[replicas[n % 2].call("POST", "/webhooks", key, body={"url": RECEIVER}) for n in range(12)]
    )
    assert Counter(status for status, _, _ in answers) == {201: MAX_ENDPOINTS, 409: 12 - 3}
    count = await pool.fetchval(
        "SELECT count(*) FROM webhook_endpoints WHERE client_id = $1", client_id_of(client)
    )
    assert count == MAX_ENDPOINTS


async def test_send_calls_share_one_budget_per_client_over_every_replica(
    replicas: tuple[Api, Api], make_key: MakeKey, client: str
) -> None:
    key = await make_key("test", client=client)
    status, endpoint, _ = await replicas[0].call("POST", "/webhooks", key, body={"url": RECEIVER})
    assert status == 201
    path = f"/webhooks/{endpoint['id']}"
    calls = [
        ("POST", f"{path}/test", None),
        ("POST", f"{path}/deliveries/1/redeliver", None),
        ("POST", f"{path}/recover", {"since": "2000-01-01T00:00:00Z"}),
    ]
    # Concurrent calls on both replicas: exactly the budget goes through.
    answers = await asyncio.gather(
        *[
            replicas[n % 2].call(calls[n % 3][0], calls[n % 3][1], key, body=calls[n % 3][2])
            for n in range(10)
        ]
    )
    limited = [(s, b, r) for s, b, r in answers if s == 429]
    assert len(answers) - len(limited) == SENDS_PER_MINUTE
    for _, problem, response in limited:
        assert problem["code"] == "webhook_sends_rate_limited"
        # One call refills in 60 / SENDS_PER_MINUTE = 15 s.
        assert 1 <= int(response.headers["Retry-After"]) <= 60 // SENDS_PER_MINUTE
    # Every kind is refused now, on either replica; another client is not.
    for method, call_path, body in calls:
        status, problem, _ = await replicas[1].call(method, call_path, key, body=body)
        assert (status, problem["code"]) == (429, "webhook_sends_rate_limited")
    other = await make_key("test", client=f"{client}-other")
    _, theirs, _ = await replicas[1].call("POST", "/webhooks", other, body={"url": RECEIVER})
    status, _, _ = await replicas[1].call("POST", f"/webhooks/{theirs['id']}/test", other)
    assert status == 202
    # An unknown endpoint is a 404, and spends nothing.
    status, problem, _ = await replicas[0].call(
        "POST", "/webhooks/00000000-0000-0000-0000-000000000000/test", other
    )
    assert (status, problem["code"]) == (404, "webhook_not_found")
