"""``POST /intents/{address}/cancel`` and ``.../refund`` over real HTTP and PostgreSQL:
every answer, repeats, concurrent calls, a late payment, and a crash before the commit.
On chain: tests/e2e/test_execution.py."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import TypeAdapter
from tests.integration.api.conftest import Api, MakeKey
from tests.integration.api.events_support import (
    DUE,
    assert_problem,
    create,
    deposit,
    page,
    pay,
)
from tests.lifecycle_calls import Outcome, apply_deposit

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.lifecycle_uow import PostgresUnitOfWork
from intentd.contract.record import IntentRecord
from intentd.lifecycle import commands
from intentd.lifecycle.chain_book import ChainBook

pytestmark = pytest.mark.integration


async def command(api: Api, key: str | None, record: dict[str, Any], name: str) -> Any:
    status, body, _ = await api.call("POST", f"/intents/{record['intent_address']}/{name}", key)
    return status, body


async def actions(pool: Pool, intent_id: int) -> list[tuple[str, int, str | None, str]]:
    rows = await pool.fetch(
        "SELECT kind, amount, reason, status FROM actions WHERE intent_id = $1 ORDER BY id",
        intent_id,
    )
    return [(r["kind"], int(r["amount"]), r["reason"], r["status"]) for r in rows]


async def event_types(api: Api, key: str, intent_id: int) -> list[str]:
    body = await page(api, key, f"/intents/{intent_id}/events")
    return [e["type"] for e in body["data"]]


async def test_cancelling_an_unpaid_intent_ends_it_and_a_repeat_answers_the_same(
    api: Api, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    status, cancelled = await command(api, key, record, "cancel")
    assert status == 200, cancelled
    TypeAdapter(IntentRecord).validate_python(cancelled)
    assert cancelled["intent_status"] == "CANCELLED"
    assert await event_types(api, key, record["id"]) == ["intent_cancelled"]
    again = await command(api, key, record, "cancel")
    assert again == (200, cancelled)
    assert await event_types(api, key, record["id"]) == ["intent_cancelled"]
    status, read, _ = await api.call("GET", f"/intents/{record['id']}", key)
    assert (status, read["intent_status"]) == (200, "CANCELLED")


async def test_cancelling_a_partly_paid_intent_refunds_it_and_a_later_payment_too(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    await pay(api, pool, record, 4_000_000)
    status, cancelled = await command(api, key, record, "cancel")
    assert (status, cancelled["intent_status"]) == (200, "REFUNDING"), cancelled
    assert cancelled["amount_received"] == "4"
    assert await actions(pool, record["id"]) == [("user_refund", 4_000_000, "cancelled", "ready")]
    assert await command(api, key, record, "cancel") == (200, cancelled)
    # a payment after the cancel is a late deposit: refunded, not credited
    async with pool.acquire() as conn:
        late = deposit(api, record, 6_115_000)
        outcome = await apply_deposit(conn, api.settings, late, now=datetime.now(UTC))
    assert outcome is Outcome.REFUND_OWED
    assert await actions(pool, record["id"]) == [
        ("user_refund", 4_000_000, "cancelled", "ready"),
        ("user_refund", 6_115_000, "late_deposit", "ready"),
    ]
    status, read, _ = await api.call("GET", f"/intents/{record['id']}", key)
    assert (read["intent_status"], read["amount_received"]) == ("REFUNDING", "4")
    # and it cannot be refunded on request as well
    status, refused = await command(api, key, record, "refund")
    assert_problem(status, refused, 409, "intent_not_refundable", None)
    assert "REFUNDING" in refused["detail"]


async def test_concurrent_cancels_decide_one_refund(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    await pay(api, pool, record, 3_000_000)
    answers = await asyncio.gather(*(command(api, key, record, "cancel") for _ in range(8)))
    assert {status for status, _ in answers} == {200}
    assert {body["intent_status"] for _, body in answers} == {"REFUNDING"}
    assert await actions(pool, record["id"]) == [("user_refund", 3_000_000, "cancelled", "ready")]


async def test_refunding_a_funded_intent_whose_prefill_waits(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    await pay(api, pool, record, DUE + 1_000_000)  # over-funded: the excess goes back too
    status, refunded = await command(api, key, record, "refund")
    assert (status, refunded["intent_status"]) == (200, "REFUNDING"), refunded
    assert await actions(pool, record["id"]) == [
        ("prefill", 10_000_000, None, "cancelled"),
        ("user_refund", DUE + 1_000_000, "merchant", "ready"),
    ]
    assert await command(api, key, record, "refund") == (200, refunded)
    status, refused = await command(api, key, record, "cancel")
    assert_problem(status, refused, 409, "intent_not_cancellable", None)
    assert refused["detail"].endswith("is REFUNDING: a refund of it is under way")


@pytest.mark.parametrize("prefill", ["submitted", "failed"])
async def test_no_refund_once_the_executor_took_the_prefill(
    api: Api, pool: Pool, make_key: MakeKey, prefill: str
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    await pay(api, pool, record, DUE)
    await pool.execute(
        "UPDATE actions SET status = $2 WHERE intent_id = $1 AND kind = 'prefill'",
        record["id"],
        prefill,
    )
    status, refused = await command(api, key, record, "refund")
    assert_problem(status, refused, 409, "intent_not_refundable", None)
    assert "is FUNDED: its prefill has been taken by the executor" in refused["detail"]
    assert await actions(pool, record["id"]) == [("prefill", 10_000_000, None, prefill)]
    status, read, _ = await api.call("GET", f"/intents/{record['id']}", key)
    assert read["intent_status"] == "FUNDED"


async def test_a_refund_does_not_wait_for_an_executor_taking_the_prefill(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    """The executor keeps the prefill's row locked while it checks, signs and records
    (network calls); the refund answers a 409 at once instead of waiting on it with
    the intent's row locked (and a 500 at the statement timeout)."""
    key = await make_key("test")
    record = await create(api, key)
    await pay(api, pool, record, DUE)
    async with pool.acquire() as executor, executor.transaction():
        await executor.execute(
            "SELECT id FROM actions WHERE intent_id = $1 AND kind = 'prefill' FOR UPDATE",
            record["id"],
        )
        status, refused = await asyncio.wait_for(command(api, key, record, "refund"), 5)
    assert_problem(status, refused, 409, "intent_not_refundable", None)
    assert "is FUNDED: its prefill has been taken by the executor" in refused["detail"]
    assert await actions(pool, record["id"]) == [("prefill", 10_000_000, None, "ready")]


async def test_the_states_that_refuse_and_the_other_errors(
    api: Api, pool: Pool, make_key: MakeKey
) -> None:
    key = await make_key("test")
    pending = await create(api, key)
    status, refused = await command(api, key, pending, "refund")
    assert_problem(status, refused, 409, "intent_not_refundable", None)
    assert "is PENDING: it is not fully paid; cancel it" in refused["detail"]
    funded = await create(api, key)
    await pay(api, pool, funded, DUE)
    status, refused = await command(api, key, funded, "cancel")
    assert_problem(status, refused, 409, "intent_not_cancellable", None)
    assert "is FUNDED" in refused["detail"]
    cancelled = await create(api, key)
    await command(api, key, cancelled, "cancel")
    status, refused = await command(api, key, cancelled, "refund")
    assert_problem(status, refused, 409, "intent_not_refundable", None)
    assert "is CANCELLED" in refused["detail"]
    for name in ("cancel", "refund"):
        # another client's intent, an unknown address, a malformed one, no key, a session
        other = await make_key("test")
        status, body = await command(api, other, pending, name)
        assert_problem(status, body, 404, "intent_not_found", None)
        unknown = {"intent_address": "0x" + "7" * 40}
        status, body = await command(api, key, unknown, name)
        assert_problem(status, body, 404, "intent_not_found", None)
        status, body = await command(api, key, {"intent_address": "0x1234"}, name)
        assert (status, body["field"]) == (422, "intent_address"), body
        status, body = await command(api, None, pending, name)
        assert status == 401, body
        status, body = await command(api, "itd_sess_x.y", pending, name)
        assert_problem(status, body, 401, "session_token_not_accepted", None)
    status, read, _ = await api.call("GET", f"/intents/{pending['id']}", key)
    assert read["intent_status"] == "PENDING"


@pytest.mark.parametrize("name", ["cancel", "refund"])
async def test_a_crash_before_the_commit_leaves_nothing_and_the_retry_decides_once(
    api: Api, pool: Pool, make_key: MakeKey, name: str
) -> None:
    key = await make_key("test")
    record = await create(api, key)
    await pay(api, pool, record, 4_000_000 if name == "cancel" else DUE)
    before = await actions(pool, record["id"])
    run = commands.cancel if name == "cancel" else commands.refund
    book = ChainBook.of_settings(api.settings)

    class Crash(Exception):
        pass

    async def decide_then_crash() -> None:
        async with pool.acquire() as conn, conn.transaction():  # never committed
            answer = await run(PostgresUnitOfWork(conn), book, record["id"], now=datetime.now(UTC))
            assert answer.applied
            raise Crash

    with pytest.raises(Crash):
        await decide_then_crash()
    assert await actions(pool, record["id"]) == before
    status, read, _ = await api.call("GET", f"/intents/{record['id']}", key)
    assert read["intent_status"] == ("PENDING" if name == "cancel" else "FUNDED")
    status, answered = await command(api, key, record, name)
    assert (status, answered["intent_status"]) == (200, "REFUNDING"), answered
    refunds = [a for a in await actions(pool, record["id"]) if a[0] == "user_refund"]
    assert len(refunds) == 1
