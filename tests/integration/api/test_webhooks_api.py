"""``/api/v1/webhooks`` over real HTTP: every operation and its problems, SSRF refusals."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve
from tests.integration.api.webhook_support import WEBHOOK_KEY

from intentd.adapters.postgres import Pool
from intentd.settings import Settings

pytestmark = pytest.mark.integration
RECEIVER = "http://127.0.0.1:9/hook"


def hooks_settings(
    infra: dict[str, str], make_settings: Callable[..., Settings], allow_private: bool
) -> Settings:
    return make_settings(
        **api_sections(
            infra,
            webhook_key=WEBHOOK_KEY,
            webhooks={"allow_private_targets": allow_private},
        )
    )


@pytest.fixture(scope="module")
async def hooks_api(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
) -> AsyncIterator[Api]:
    settings = hooks_settings(infra, make_settings, allow_private=True)
    async for url in serve(settings, pool):
        yield Api(url, settings, http)


@pytest.fixture(scope="module")
async def strict_api(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
) -> AsyncIterator[Api]:
    settings = hooks_settings(infra, make_settings, allow_private=False)
    async for url in serve(settings, pool):
        yield Api(url, settings, http)


@pytest.fixture(autouse=True)
async def no_endpoints_left(pool: Pool) -> AsyncIterator[None]:
    yield
    async with pool.acquire() as conn:
        await conn.execute("DELETE FROM webhook_endpoints")


async def test_register_read_list_change_delete(hooks_api: Api, make_key: MakeKey) -> None:
    key = await make_key("test", client="hooks-crud")
    status, created, _ = await hooks_api.call(
        "POST",
        "/webhooks",
        key,
        body={"url": RECEIVER, "event_types": ["intent_funded"], "description": "shop"},
    )
    assert status == 201, created
    assert created["secret"].startswith("whsec_")
    assert (created["mode"], created["enabled"], created["event_types"]) == (
        "test",
        True,
        ["intent_funded"],
    )
    path = f"/webhooks/{created['id']}"
    status, one, _ = await hooks_api.call("GET", path, key)
    assert status == 200 and "secret" not in one and one["description"] == "shop"

    status, changed, _ = await hooks_api.call(
        "PATCH", path, key, body={"event_types": None, "enabled": False}
    )
    assert status == 200, changed
    assert (changed["event_types"], changed["enabled"], changed["disabled_reason"]) == (
        None,
        False,
        "client",
    )
    status, changed, _ = await hooks_api.call("PATCH", path, key, body={"enabled": True})
    assert (changed["enabled"], changed["disabled_reason"]) == (True, None)

    stranger = await make_key("test", client="hooks-stranger")
    live_same_client = await make_key("live", client="hooks-crud")
    for other in (stranger, live_same_client):
        status, problem, _ = await hooks_api.call("GET", path, other)
        assert (status, problem["code"]) == (404, "webhook_not_found")
        status, problem, _ = await hooks_api.call("DELETE", path, other)
        assert status == 404

    for n in range(2):
        await hooks_api.call("POST", "/webhooks", key, body={"url": f"{RECEIVER}/{n}"})
    status, page, _ = await hooks_api.call("GET", "/webhooks", key, params={"limit": "2"})
    assert status == 200 and len(page["data"]) == 2 and page["next_cursor"]
    assert all("secret" not in e for e in page["data"])
    status, rest, _ = await hooks_api.call(
        "GET", "/webhooks", key, params={"limit": "2", "cursor": page["next_cursor"]}
    )
    assert len(rest["data"]) == 1 and rest["next_cursor"] is None
    ids = {e["id"] for e in page["data"] + rest["data"]}
    assert created["id"] in ids and len(ids) == 3

    async with hooks_api.http.delete(
        f"{hooks_api.url}/api/v1{path}", headers={"Authorization": f"Bearer {key}"}
    ) as response:
        assert response.status == 204
    status, problem, _ = await hooks_api.call("GET", path, key)
    assert status == 404


async def test_rotation_answers_a_new_secret_and_keeps_the_old_one_a_day(
    hooks_api: Api, make_key: MakeKey
) -> None:
    key = await make_key("test", client="hooks-rotate")
    _, created, _ = await hooks_api.call("POST", "/webhooks", key, body={"url": RECEIVER})
    status, rotated, _ = await hooks_api.call(
        "POST", f"/webhooks/{created['id']}/rotate-secret", key
    )
    assert status == 200, rotated
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != created["secret"]
    until = datetime.fromisoformat(rotated["previous_secret_expires_at"])
    assert abs(until - datetime.now(UTC) - timedelta(hours=24)) < timedelta(minutes=1)


async def test_problems_are_precise(hooks_api: Api, make_key: MakeKey) -> None:
    key = await make_key("test", client="hooks-problems")
    status, problem, _ = await hooks_api.call("POST", "/webhooks", None, body={"url": RECEIVER})
    assert (status, problem["code"]) == (401, "missing_credentials")
    async with hooks_api.http.post(
        f"{hooks_api.url}/api/v1/webhooks",
        data="url",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "text/plain"},
    ) as response:
        assert response.status == 415
    cases = [
        ({"url": 1}, 400, "validation_error", "url"),
        ({"url": RECEIVER, "event_types": ["intent_paid"]}, 400, "validation_error", None),
        ({"url": RECEIVER, "colour": "red"}, 400, "validation_error", "colour"),
        ({"url": "ftp://example.com/"}, 422, "webhook_url_invalid", "url"),
        ({"url": "https://u:p@example.com/"}, 422, "webhook_url_invalid", "url"),
    ]
    for body, want_status, code, field in cases:
        status, problem, response = await hooks_api.call("POST", "/webhooks", key, body=body)
        assert (status, problem["code"]) == (want_status, code), problem
        assert response.content_type == "application/problem+json"
        if field is not None:
            assert problem["field"] == field
    live = await make_key("live", client="hooks-problems")
    status, problem, _ = await hooks_api.call(
        "POST", "/webhooks", live, body={"url": "http://example.com/hook"}
    )
    assert (status, problem["code"]) == (422, "webhook_url_not_https")

    _, created, _ = await hooks_api.call("POST", "/webhooks", key, body={"url": RECEIVER})
    base = f"/webhooks/{created['id']}"
    status, problem, _ = await hooks_api.call(
        "GET", f"{base}/deliveries", key, params={"cursor": "!!"}
    )
    assert (status, problem["code"]) == (400, "invalid_cursor")
    now = datetime.now(UTC).isoformat()
    status, problem, _ = await hooks_api.call(
        "POST", f"{base}/recover", key, body={"since": now, "until": now}
    )
    assert (status, problem["code"]) == (422, "empty_window")
    status, problem, _ = await hooks_api.call("POST", f"{base}/deliveries/12345/redeliver", key)
    assert (status, problem["code"]) == (404, "delivery_not_found")
    status, problem, _ = await hooks_api.call("GET", "/webhooks/not-a-uuid", key)
    assert (status, problem["code"]) == (400, "validation_error")
    status, problem, _ = await hooks_api.call("PATCH", base, key, body={"url": None})
    assert (status, problem["code"]) == (422, "null_not_allowed")
    await hooks_api.call("PATCH", base, key, body={"enabled": False})
    for path in (f"{base}/test", f"{base}/deliveries/1/redeliver"):
        status, problem, _ = await hooks_api.call("POST", path, key)
        assert (status, problem["code"]) == (409, "webhook_disabled")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://[::1]/hook",
        "http://10.0.0.7/hook",
        "http://192.168.1.1/hook",
        "http://100.64.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "http://localhost/hook",
        "http://metadata.google.internal/computeMetadata/v1",
        "http://vm:8080/hook",  # a name that resolves to 127.0.0.1 (/etc/hosts)
        "http://2130706433/hook",  # 127.0.0.1 as one number, resolved by getaddrinfo
        "http://0x7f.1/hook",  # 127.0.0.1 in hex shorthand
        "http://[fec0::1]/hook",  # IPv6 site-local
        "http://[fd00:ec2::254]/latest/meta-data",  # AWS metadata over IPv6
        "http://[::ffff:0:a9fe:a9fe]/latest",  # IPv4-translated metadata address
        "http://[64:ff9b::a9fe:a9fe]/latest",  # NAT64 to the metadata address
        "http://[2002:a9fe:a9fe::]/latest",  # 6to4 of the metadata address
        "http://192.0.0.8/hook",  # IETF protocol assignments
    ],
)
async def test_internal_targets_are_refused_at_registration(
    strict_api: Api, make_key: MakeKey, url: str
) -> None:
    key = await make_key("test", client="hooks-ssrf")
    status, problem, _ = await strict_api.call("POST", "/webhooks", key, body={"url": url})
    assert (status, problem["code"], problem["field"]) == (422, "webhook_url_forbidden", "url")


async def test_unresolvable_names_are_refused(strict_api: Api, make_key: MakeKey) -> None:
    key = await make_key("test", client="hooks-ssrf")
    status, problem, _ = await strict_api.call(
        "POST", "/webhooks", key, body={"url": "https://no-such-host.invalid/hook"}
    )
    assert (status, problem["code"]) == (422, "webhook_url_unresolvable")


async def test_without_the_key_webhooks_are_disabled(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
    make_key: MakeKey,
) -> None:
    key = await make_key("test", client="hooks-nokey")
    settings = make_settings(**api_sections(infra, webhook_key=None))
    async for url in serve(settings, pool):
        api = Api(url, settings, http)
        status, problem, _ = await api.call("POST", "/webhooks", key, body={"url": RECEIVER})
        assert (status, problem["code"]) == (503, "webhooks_disabled")
        status, problem, _ = await api.call("GET", "/webhooks", key)
        assert status == 200 and problem == {"data": [], "next_cursor": None}


async def test_a_405_lists_every_method_of_the_path(hooks_api: Api, make_key: MakeKey) -> None:
    key = await make_key("test", client="hooks-405")
    _, created, _ = await hooks_api.call("POST", "/webhooks", key, body={"url": RECEIVER})
    status, _, response = await hooks_api.call("PUT", f"/webhooks/{created['id']}", key)
    assert status == 405 and response.headers["Allow"] == "DELETE, GET, PATCH"
    status, _, response = await hooks_api.call("DELETE", "/webhooks", key)
    assert status == 405 and response.headers["Allow"] == "GET, POST"
