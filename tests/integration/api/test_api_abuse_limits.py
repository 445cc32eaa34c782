"""Limits a caller cannot talk its way around (issue 11, items 9 and 10): sessions
have their own bucket and a cap on intents; unknown keys are limited by source
address and never crowd valid keys out of the cache."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest
from tests.integration.api.conftest import Api, MakeKey
from tests.integration.api.test_api_trigger_sessions import PAYEE, new_session, usdc

from intentd.adapters import api_keys
from intentd.adapters.api_keys import ApiKey
from intentd.api.auth import Authenticator
from intentd.api.credentials import generate_key
from intentd.api.problems import ApiProblem
from intentd.settings import Settings

pytestmark = pytest.mark.integration


@pytest.mark.xfail(strict=True, reason="issue 11 item 9: sessions spend the key's bucket")
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


@pytest.mark.xfail(strict=True, reason="issue 11 item 9: sessions create without limit")
async def test_a_session_creates_at_most_its_cap_of_intents(api: Api, make_key: MakeKey) -> None:
    key = await make_key("test", rate_limit=1000)
    token = (await new_session(api, key))["session_token"]
    choice: dict[str, Any] = {
        "source_chain": "BASE_TESTNET",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "refund_address": PAYEE,
    }
    cap = 5  # the default of api.max_intents_per_session
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
    # A retry of a create the session made still answers that intent.
    status, again, _ = await api.call(
        "POST", "/session/intents", token, body=choice, headers={"Idempotency-Key": "k0"}
    )
    assert status in (200, 201) and again["intent_address"] == created[0]


def random_key() -> str:
    return "itd_test_" + secrets.token_urlsafe(32)


@pytest.mark.xfail(strict=True, reason="issue 11 item 10: unknown keys are never limited")
async def test_unknown_keys_are_limited_by_source_address(api: Api) -> None:
    statuses = [(await api.call("GET", "/intents/424242", random_key()))[0] for _ in range(300)]
    assert statuses.count(429) > 0, statuses


class CountingPool:
    """A pool whose connections are never used: the lookups are counted instead."""

    def __init__(self) -> None:
        self.acquired = 0

    @asynccontextmanager
    async def acquire(self, timeout: float | None = None) -> AsyncIterator[object]:
        self.acquired += 1
        yield object()


@pytest.mark.xfail(strict=True, reason="issue 11 item 10: a flood of misses clears the cache")
async def test_a_flood_of_unknown_keys_does_not_evict_valid_ones(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    auth = Authenticator(settings, pool)  # type: ignore[arg-type]
    assert (await auth.api_key(f"Bearer {valid.key}")).key == stored
    for _ in range(100_001):  # the old cache's limit, passed
        with pytest.raises(ApiProblem):
            await auth.api_key(f"Bearer {random_key()}")
    before = pool.acquired
    assert (await auth.api_key(f"Bearer {valid.key}")).key == stored
    assert pool.acquired == before, "the valid key was looked up again"
