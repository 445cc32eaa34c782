"""Limits a caller cannot talk its way around (issue 11, items 9 and 10): sessions
have their own bucket and a cap on intents; unknown keys are limited by source
address and never crowd valid keys out of the cache."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import aiohttp
import pytest
from tests.integration.api.conftest import Api, MakeKey, api_sections, serve
from tests.integration.api.test_api_trigger_sessions import PAYEE, new_intent, new_session, usdc

from intentd.adapters.postgres import Pool, api_keys
from intentd.adapters.postgres.api_keys import ApiKey
from intentd.api.callers.auth import Authenticator
from intentd.api.connections import Database
from intentd.api.models import TriggerResult
from intentd.api.problems import ApiProblem
from intentd.credentials import generate_key
from intentd.settings import Settings

pytestmark = pytest.mark.integration


async def test_a_session_does_not_spend_its_merchants_rate_limit(
    api: Api, make_key: MakeKey
) -> None:
    key = await make_key("test", rate_limit=5)
    token = (await new_session(api, key))["session_token"]
    answers = [(await api.call("GET", "/session", token))[:2] for _ in range(40)]
    limited = [data for status, data in answers if status == 429]
    assert limited and {d["code"] for d in limited} == {"session_rate_limited"}
    status, data, _ = await api.call("GET", "/intents/424242", key)
    assert status == 404, data


async def test_a_session_creates_at_most_its_cap_of_intents(api: Api, make_key: MakeKey) -> None:
    key = await make_key("test", rate_limit=1000)
    token = (await new_session(api, key))["session_token"]
    choice: dict[str, Any] = {
        "source_chain": "BASE_TESTNET",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "refund_address": PAYEE,
    }
    cap = api.settings.api.max_intents_per_session
    assert cap == 5  # the default
    created = []
    for n in range(cap):
        status, record, _ = await api.call(
            "POST", "/session/intents", token, body=choice, headers={"Idempotency-Key": f"k{n}"}
        )
        assert status == 201, record
        created.append(record["intent_address"])
    status, data, _ = await api.call("POST", "/session/intents", token, body=choice)
    assert (status, data["code"]) == (409, "session_intent_limit"), data
    assert str(cap) in data["detail"]
    # A retry of a create the session made is not refused by the cap. (What it gets
    # is the Idempotency-Key rules': the session's intents expire with the session, so
    # a retry a second later is a different request today, a 409 idempotency_key_reused.)
    status, again, _ = await api.call(
        "POST", "/session/intents", token, body=choice, headers={"Idempotency-Key": "k0"}
    )
    assert again.get("code") != "session_intent_limit", again
    if status != 409:
        assert again["intent_address"] == created[0]


def random_key() -> str:
    return "itd_test_" + secrets.token_urlsafe(32)


async def flood(api: Api, source: str, count: int = 30) -> list[tuple[int, str]]:
    """Requests with made-up keys, through a trusted proxy that names ``source``
    (after a hop the client wrote itself)."""
    headers = {"X-Forwarded-For": f"198.51.100.1, {source}"}
    answers = []
    for _ in range(count):
        status, data, _ = await api.call("GET", "/intents/424242", random_key(), headers=headers)
        answers.append((status, data["code"]))
    return answers


async def test_unknown_keys_are_limited_by_source_address(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
    make_key: MakeKey,
) -> None:
    api_section = {"source_rate_limit": 5, "trusted_proxies": ["127.0.0.1/32"]}
    settings = make_settings(**api_sections(infra, api=api_section))
    key = await make_key("test", rate_limit=1000)
    async for url in serve(settings, pool):
        api = Api(url, settings, http)
        first = await flood(api, "203.0.113.1")
        assert first[:5] == [(401, "invalid_api_key")] * 5
        assert (429, "source_rate_limited") in first
        # Another source (as the trusted proxy tells) has a bucket of its own, and a
        # valid key from the flooded source still works.
        assert (await flood(api, "203.0.113.2", 5)) == [(401, "invalid_api_key")] * 5
        headers = {"X-Forwarded-For": "203.0.113.1"}
        status, data, _ = await api.call("GET", "/intents/424242", key, headers=headers)
        assert status == 404, data


class CountingPool:
    """A pool whose connections are never used: the lookups are counted instead."""

    def __init__(self) -> None:
        self.acquired = 0

    async def acquire(self, timeout: float | None = None) -> object:
        self.acquired += 1
        return object()

    async def release(self, conn: object, *, timeout: float | None = None) -> None:
        pass


async def test_a_flood_of_unknown_keys_does_not_evict_valid_ones(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Entries live longer than the flood takes on a loaded machine: only eviction counts.
    settings = make_settings(api={"key_cache_ttl": 300})
    valid = generate_key("test")
    stored = ApiKey(
        id=uuid4(),
        client_id=uuid4(),
        client_name="shop",
        mode="test",
        prefix=valid.prefix,
        rate_limit=10**6,
        created_at=datetime.now(UTC),
        revoked_at=None,
    )

    async def find_by_hash(conn: object, key_hash: str) -> ApiKey | None:
        return stored if key_hash == valid.key_hash else None

    monkeypatch.setattr(api_keys, "find_by_hash", find_by_hash)
    pool = CountingPool()
    auth = Authenticator(settings, Database.of(settings, pool))  # type: ignore[arg-type]
    assert (await auth.api_key(f"Bearer {valid.key}")).key == stored
    for _ in range(100_001):  # the old cache's limit, passed
        with pytest.raises(ApiProblem):
            await auth.api_key(f"Bearer {random_key()}")
    before = pool.acquired
    assert (await auth.api_key(f"Bearer {valid.key}")).key == stored
    assert pool.acquired == before, "the valid key was looked up again"


class ExhaustedPool:
    """Every connection open and lent out: busy, not away."""

    async def acquire(self, timeout: float | None = None) -> object:
        await asyncio.wait_for(asyncio.Event().wait(), timeout)
        raise AssertionError("unreachable")

    def get_size(self) -> int:
        return 1

    def get_max_size(self) -> int:
        return 1


async def test_a_key_lookup_without_a_free_connection_is_a_503(
    make_settings: Callable[..., Settings], infra: dict[str, str]
) -> None:
    settings = make_settings(**api_sections(infra, api={"db_acquire_timeout": 0.05}))
    auth = Authenticator(settings, Database.of(settings, ExhaustedPool()))  # type: ignore[arg-type]
    with pytest.raises(ApiProblem) as refused:
        await asyncio.wait_for(auth.api_key(f"Bearer {random_key()}", "192.0.2.1"), 5)
    problem = refused.value
    assert (problem.status, problem.code) == (503, "database_busy")
    assert problem.headers["Retry-After"] == "1"


async def test_trigger_processing_is_refused_again_within_its_cooldown(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    pool: Pool,
    http: aiohttp.ClientSession,
    make_key: MakeKey,
) -> None:
    """Issue 11 item 8: a second call for an intent within ``api.trigger_cooldown`` is a
    429 with ``Retry-After``, before any chain read; a terminal intent is answered from
    the store (no chain read, no cooldown)."""
    settings = make_settings(
        **api_sections(infra, api={"source_rate_limit": 100_000, "trigger_cooldown": 60})
    )
    key = await make_key("test", rate_limit=1000)
    async for url in serve(settings, pool):
        api = Api(url, settings, http)
        address = (await new_intent(api, key))["intent_address"]
        path = f"/intents/{address}/trigger-processing"
        status, first, _ = await api.call("POST", path, key)
        assert status == 200, first
        status, again, response = await api.call("POST", path, key)
        assert (status, again["code"]) == (429, "trigger_cooldown"), again
        assert 1 <= int(response.headers["Retry-After"]) <= 60

        ended = (await new_intent(api, key))["intent_address"]
        await pool.execute(
            "UPDATE intents SET status = 'EXPIRED' WHERE intent_address = $1", ended.lower()
        )
        for _ in range(2):
            status, answer, _ = await api.call("POST", f"/intents/{ended}/trigger-processing", key)
            assert status == 200, answer
            TriggerResult.model_validate(answer)
            assert answer["intent"]["intent_status"] == "EXPIRED"
            assert (answer["balance"], answer["scan"], answer["deposits"]) == (None, None, [])
