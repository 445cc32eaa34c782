"""The lifecycle side of execution on real PostgreSQL: actions, results, expiry."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from tests.lifecycle_calls import Outcome, apply_action_result, apply_deposit, expire
from tests.support import new_intent

from intentd.adapters.postgres import Pool, intent_store
from intentd.adapters.postgres.lifecycle_uow import PostgresStore
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.expiry import Expiry
from intentd.messages import ActionResultMessage, DepositMessage, action_result_id, deposit_id
from intentd.settings import Settings

pytestmark = pytest.mark.integration
CHAIN = "BASE_TESTNET"


def pay(settings: Settings, to: str, amount: int) -> DepositMessage:
    usdc = next(t.address for t in settings.chains[CHAIN].tokens if t.symbol == "USDC")
    tx = "0x" + secrets.token_hex(32)
    return DepositMessage(
        id=deposit_id(CHAIN, tx, usdc.lower(), 0),
        chain=CHAIN,
        chain_id=84532,
        tx_hash=tx,
        log_index=0,
        transfer_index=0,
        block_number=1,
        block_hash="0x" + secrets.token_hex(32),
        block_time=int(datetime.now(UTC).timestamp()),
        token=usdc.lower(),
        from_address="0x" + "2" * 40,
        to_address=to,
        amount=amount,
    )


async def actions(pool: Pool, intent_id: int) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        "SELECT id, kind, chain, token, amount, to_address, reason, status, signer_kind,"
        " signer_index, gas_from_amount FROM actions WHERE intent_id = $1 ORDER BY id",
        intent_id,
    )
    return [dict(r) for r in rows]


async def events(pool: Pool, intent_id: int) -> list[dict[str, Any]]:
    rows = await pool.fetch("SELECT payload FROM outbox WHERE key = $1 ORDER BY id", str(intent_id))
    return [orjson.loads(bytes(r["payload"])) for r in rows]


def result(
    action: dict[str, Any], intent_id: int, event: str, **fields: Any
) -> ActionResultMessage:
    return ActionResultMessage(
        id=action_result_id(action["id"], event),
        action_id=action["id"],
        intent_id=intent_id,
        action_kind=action["kind"],
        event=event,
        chain=action["chain"],
        **fields,
    )


async def apply(pool: Pool, settings: Settings, message: ActionResultMessage) -> Outcome:
    async with pool.acquire() as conn:
        return await apply_action_result(conn, settings, message, now=datetime.now(UTC))


async def test_funded_to_completed_with_excess_refund(pool: Pool, settings: Settings) -> None:
    row = await new_intent(pool, settings, amount="10")
    async with pool.acquire() as conn:
        await apply_deposit(
            conn, settings, pay(settings, row.intent_address, 12_000_000), now=datetime.now(UTC)
        )
    [prefill] = await actions(pool, row.id)
    assert (prefill["kind"], prefill["status"], prefill["signer_kind"]) == (
        "prefill",
        "ready",
        "relayer",
    )
    assert prefill["chain"] == row.destination_chain and prefill["to_address"] == row.recipient
    assert int(prefill["amount"]) == row.amount_out and prefill["token"] == row.token_out

    tx = "0x" + "ab" * 32
    assert await apply(pool, settings, result(prefill, row.id, "sent", tx_hash=tx)) is (
        Outcome.APPLIED
    )
    assert await apply(pool, settings, result(prefill, row.id, "sent", tx_hash=tx)) is (
        Outcome.DUPLICATE
    )
    stored = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
    assert stored is not None and stored.status is IntentStatus.INITIATED
    assert stored.tx_hash == tx and stored.needs_relay
    assert stored.relayer == settings.chains[row.destination_chain].relayer.lower()
    excess = [a for a in await actions(pool, row.id) if a["kind"] == "user_refund"]
    assert [
        (a["reason"], int(a["amount"]), a["to_address"], a["signer_index"]) for a in excess
    ] == [("excess", 2_000_000, row.refund_address, row.address_index)]

    await apply(pool, settings, result(prefill, row.id, "confirmed", tx_hash=tx, block_number=9))
    stored = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
    assert stored is not None and stored.status is IntentStatus.COMPLETED
    repay = [a for a in await actions(pool, row.id) if a["kind"] == "relayer_refund"]
    assert [(int(a["amount"]), a["to_address"], a["chain"]) for a in repay] == [
        (10_000_000, stored.relayer, CHAIN)
    ]

    await apply(
        pool,
        settings,
        result(
            excess[0],
            row.id,
            "confirmed",
            tx_hash="0x" + "cd" * 32,
            amount_sent=2_000_000,
            gas_cost=0,
        ),
    )
    stored = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
    assert stored is not None and stored.status is IntentStatus.COMPLETED  # excess ends nothing
    kinds = [(e["type"], e["sequence"]) for e in await events(pool, row.id)]
    assert kinds == [
        ("intent_funded", 1),
        ("intent_initiated", 2),
        ("intent_completed", 3),
        ("intent_refunded", 4),
    ]
    refunded = (await events(pool, row.id))[-1]["data"]["refund"]
    assert refunded["reason"] == "excess" and refunded["amount"] == "2"


async def test_failed_prefill_refunds_everything(pool: Pool, settings: Settings) -> None:
    row = await new_intent(pool, settings, amount="10")
    async with pool.acquire() as conn:
        await apply_deposit(
            conn, settings, pay(settings, row.intent_address, 10_000_000), now=datetime.now(UTC)
        )
    [prefill] = await actions(pool, row.id)
    await apply(pool, settings, result(prefill, row.id, "failed", error="reverted 3 times"))
    stored = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
    assert stored is not None and stored.status is IntentStatus.REFUNDING
    [refund] = [a for a in await actions(pool, row.id) if a["kind"] == "user_refund"]
    assert (refund["reason"], int(refund["amount"])) == ("failed", 10_000_000)
    await apply(
        pool,
        settings,
        result(
            refund,
            row.id,
            "confirmed",
            tx_hash="0x" + "ef" * 32,
            amount_sent=10_000_000,
            gas_cost=0,
        ),
    )
    stored = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
    assert stored is not None and stored.status is IntentStatus.REFUNDED
    last = (await events(pool, row.id))[-1]
    assert last["type"] == "intent_refunded" and last["data"]["refund"]["reason"] == "failed"
    assert last["intent"]["intent_status"] == "REFUNDED"


async def test_a_prefill_failing_after_the_excess_refund_refunds_only_what_is_held(
    pool: Pool, settings: Settings
) -> None:
    """12 received on 10 due: excess 2 at initiation, then 10 when the prefill fails."""
    row = await new_intent(pool, settings, amount="10")
    async with pool.acquire() as conn:
        await apply_deposit(
            conn, settings, pay(settings, row.intent_address, 12_000_000), now=datetime.now(UTC)
        )
    [prefill] = await actions(pool, row.id)
    await apply(pool, settings, result(prefill, row.id, "sent", tx_hash="0x" + "ab" * 32))
    await apply(pool, settings, result(prefill, row.id, "failed", error="relayer ran low"))
    stored = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
    assert stored is not None and stored.status is IntentStatus.REFUNDING
    refunds = [
        (a["reason"], int(a["amount"]))
        for a in await actions(pool, row.id)
        if a["kind"] == "user_refund"
    ]
    assert refunds == [("excess", 2_000_000), ("failed", 10_000_000)]
    assert stored.refunded == stored.received == 12_000_000


async def test_expiry_with_and_without_funds(pool: Pool, settings: Settings) -> None:
    empty = await new_intent(pool, settings, amount="10")
    partial = await new_intent(pool, settings, amount="10")
    async with pool.acquire() as conn:
        await apply_deposit(
            conn, settings, pay(settings, partial.intent_address, 4_000_000), now=datetime.now(UTC)
        )
        early = datetime.now(UTC)
        assert await expire(conn, settings, empty.id, now=early) is Outcome.NOT_DUE
        later = empty.expires_at + timedelta(seconds=1)
        assert await expire(conn, settings, empty.id, now=later) is Outcome.EXPIRED
        assert await expire(conn, settings, empty.id, now=later) is Outcome.NOT_DUE
        assert await expire(conn, settings, partial.id, now=later) is Outcome.EXPIRED
    gone = await intent_store.get_by_id(pool, empty.id)  # type: ignore[arg-type]
    assert gone is not None and gone.status is IntentStatus.EXPIRED
    assert await actions(pool, empty.id) == []
    refunding = await intent_store.get_by_id(pool, partial.id)  # type: ignore[arg-type]
    assert refunding is not None and refunding.status is IntentStatus.REFUNDING
    [refund] = await actions(pool, partial.id)
    assert (refund["reason"], int(refund["amount"])) == ("expired", 4_000_000)


async def test_expiry_loop_acts_within_seconds_of_the_grace(pool: Pool, settings: Settings) -> None:
    grace = 2
    intents = settings.intents.model_copy(update={"expiry_grace_seconds": grace})
    settings = settings.model_copy(update={"intents": intents})
    row = await new_intent(pool, settings, amount="10")
    await pool.execute(
        "UPDATE intents SET expires_at = now() + interval '1 second' WHERE id = $1", row.id
    )
    stop = asyncio.Event()
    task = asyncio.create_task(
        Expiry(settings, PostgresStore(pool), book=ChainBook.of_settings(settings)).run(stop)
    )
    try:
        deadline = asyncio.get_running_loop().time() + 5 + grace
        while True:
            stored = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
            assert stored is not None
            if stored.status is IntentStatus.EXPIRED:
                break
            assert asyncio.get_running_loop().time() < deadline, (
                "not expired within 4 s of the grace"
            )
            await asyncio.sleep(0.1)
        late = datetime.now(UTC) - stored.expires_at
        assert timedelta(seconds=grace) <= late < timedelta(seconds=grace + 3)
    finally:
        stop.set()
        await task


async def test_expiry_query_can_use_the_partial_index(pool: Pool) -> None:
    """The expiry query is answered from ``intents_pending_by_expiry`` (no table scan once
    the table is large; here seq scans are disabled because test tables are tiny)."""
    async with pool.acquire() as conn:
        await conn.execute("SET enable_seqscan = off")
        try:
            plan = await conn.fetchval(
                "EXPLAIN (FORMAT JSON) SELECT id FROM intents WHERE status = 'PENDING'"
                " AND expires_at <= now() ORDER BY expires_at LIMIT 100"
            )
        finally:
            await conn.execute("RESET enable_seqscan")
    assert "intents_pending_by_expiry" in str(plan)
