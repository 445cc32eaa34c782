"""Helpers of the event log's API tests: intents created over HTTP, moved on by the
lifecycle's own handlers, and pages read back."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import orjson
from tests.integration.api.conftest import Api
from tests.lifecycle_calls import Outcome, apply_deposit, expire

from intentd.adapters.postgres import Pool, intent_store
from intentd.api.events.routes import EventPage
from intentd.api.models import Problem
from intentd.messages import DepositMessage, deposit_id

PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
CHAIN = "BASE_TESTNET"
DUE = 10_115_000
"""Base units of USDC an intent of 10 USDC owes with the test fees (10.115)."""
_T = TypeVar("_T")


def usdc(api: Api, chain: str = CHAIN) -> str:
    """The dev USDC of ``chain`` (at the chain's real testnet USDC address: each chain's
    is different)."""
    return next(t.address for t in api.settings.chains[chain].tokens if t.symbol == "USDC")


async def create(api: Api, key: str, **changes: Any) -> dict[str, Any]:
    body = {
        "amount": "10",
        "amountSymbol": "USDC",
        "tokenIn": usdc(api),
        "source_chain": CHAIN,
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": PAYEE,
        "refund_address": PAYEE,
        **changes,
    }
    status, record, _ = await api.call("POST", "/intents", key, body=body)
    assert status == 201, record
    return record


def deposit(api: Api, record: dict[str, Any], amount: int) -> DepositMessage:
    tx = "0x" + secrets.token_hex(32)
    token = usdc(api).lower()
    return DepositMessage(
        id=deposit_id(CHAIN, tx, token, 0),
        chain=CHAIN,
        chain_id=84532,
        tx_hash=tx,
        log_index=0,
        transfer_index=0,
        block_number=1,
        block_hash="0x" + secrets.token_hex(32),
        block_time=int(datetime.now(UTC).timestamp()),
        token=token,
        from_address="0x" + "2" * 40,
        to_address=record["intent_address"].lower(),
        amount=amount,
    )


async def pay(api: Api, pool: Pool, record: dict[str, Any], amount: int) -> None:
    message = deposit(api, record, amount)
    async with pool.acquire() as conn:
        outcome = await apply_deposit(conn, api.settings, message, now=datetime.now(UTC))
    assert outcome is Outcome.CREDITED


async def expire_now(api: Api, pool: Pool, intent_id: int) -> None:
    row = await intent_store.get_by_id(pool, intent_id)  # type: ignore[arg-type]
    assert row is not None
    async with pool.acquire() as conn:
        later = row.expires_at + timedelta(seconds=1)
        assert await expire(conn, api.settings, intent_id, now=later) is Outcome.EXPIRED


async def until(check: Callable[[], Awaitable[_T | None]], seconds: float = 10.0) -> _T:
    """The first non-None answer of ``check``: the list shows an event once every
    transaction older than it has ended, and the database is shared with other tests."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        found = await check()
        if found is not None:
            return found
        assert asyncio.get_running_loop().time() < deadline, "not visible in time"
        await asyncio.sleep(0.05)


async def page(api: Api, key: str, path: str = "/events", **params: Any) -> dict[str, Any]:
    status, body, _ = await api.call("GET", path, key, params=params or None)
    assert status == 200, body
    EventPage.model_validate(body)
    return body


async def all_events(api: Api, key: str, **params: Any) -> list[dict[str, Any]]:
    """Every event the list shows, following cursors."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        extra = {"cursor": cursor} if cursor else {}
        body = await page(api, key, **params, **extra)
        found += body["data"]
        if not body["has_more"]:
            return found
        cursor = body["next_cursor"]


async def outbox(pool: Pool, intent_id: int) -> list[dict[str, Any]]:
    rows = await pool.fetch("SELECT payload FROM outbox WHERE key = $1 ORDER BY id", str(intent_id))
    return [orjson.loads(bytes(r["payload"])) for r in rows]


def assert_problem(status: int, data: Any, expected: int, code: str, field: str | None) -> None:
    assert (status, data.get("code"), data.get("field")) == (expected, code, field), data
    Problem.model_validate(data)


async def first(found: Awaitable[list[dict[str, Any]]]) -> dict[str, Any] | None:
    events = await found
    return events[0] if events else None


async def all_if(found: Awaitable[list[dict[str, Any]]], count: int) -> list[dict[str, Any]] | None:
    events = await found
    return events if len(events) == count else None


async def data_of(body: Awaitable[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await body)["data"]
    return found
