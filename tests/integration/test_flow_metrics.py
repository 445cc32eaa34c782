"""The metrics an operator alerts and graphs on, as the lifecycle really sets them.

``intentd_deposit_to_funded_seconds`` and ``intentd_funded_to_completed_seconds``
(each step observed once per intent) and ``intentd_outbox_backlog`` (what is left to
relay, before and after each batch) on real PostgreSQL and Kafka.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import REGISTRY
from tests.lifecycle_calls import Outcome, apply_action_result, apply_deposit
from tests.support import new_intent

from intentd.adapters.kafka import KafkaPublisher
from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.lifecycle_store import enqueue
from intentd.adapters.postgres.outbox import _RELAY_LOCK, OutboxRelay
from intentd.messages import ActionResultMessage, DepositMessage, action_result_id, deposit_id
from intentd.settings import Settings

pytestmark = pytest.mark.integration
CHAIN = "BASE_TESTNET"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def payment(settings: Settings, to: str, amount: int, *, age: float) -> DepositMessage:
    usdc = next(t.address for t in settings.chains[CHAIN].tokens if t.symbol == "USDC")
    tx = "0x" + secrets.token_hex(32)
    return DepositMessage(
        id=deposit_id(CHAIN, tx, usdc.lower(), 0),
        chain=CHAIN,
        chain_id=settings.chains[CHAIN].chain_id,
        tx_hash=tx,
        log_index=0,
        block_number=1,
        block_hash="0x" + secrets.token_hex(32),
        block_time=int((datetime.now(UTC) - timedelta(seconds=age)).timestamp()),
        token=usdc.lower(),
        from_address="0x" + "2" * 40,
        to_address=to.lower(),
        amount=amount,
        transfer_index=0,
    )


async def test_each_step_of_an_intent_is_timed_once(pool: Pool, settings: Settings) -> None:
    row = await new_intent(pool, settings, amount="10")
    dest = row.destination_chain

    def figures() -> tuple[float, float, float]:
        return (
            sample("intentd_deposit_to_funded_seconds_count", chain=CHAIN),
            sample("intentd_deposit_to_funded_seconds_sum", chain=CHAIN),
            sample("intentd_funded_to_completed_seconds_count", chain=dest),
        )

    start = figures()
    async with pool.acquire() as conn:
        part = payment(settings, row.intent_address, 4_000_000, age=50)
        assert await apply_deposit(conn, settings, part, now=datetime.now(UTC)) is (
            Outcome.CREDITED
        )
        assert figures()[0] == start[0]  # still PENDING
        rest = payment(settings, row.intent_address, 6_000_000, age=30)
        await apply_deposit(conn, settings, rest, now=datetime.now(UTC))
        more = payment(settings, row.intent_address, 1_000_000, age=1)
        await apply_deposit(conn, settings, more, now=datetime.now(UTC))  # already FUNDED
    funded = figures()
    assert funded[0] == start[0] + 1
    assert 29 <= funded[1] - start[1] <= 60  # from the block of the deposit that funded it

    prefill = await pool.fetchrow(
        "SELECT id, chain FROM actions WHERE intent_id = $1 AND kind = 'prefill'", row.id
    )
    assert prefill is not None

    def result(event: str) -> ActionResultMessage:
        return ActionResultMessage(
            id=action_result_id(prefill["id"], event),
            action_id=prefill["id"],
            intent_id=row.id,
            action_kind="prefill",
            event=event,
            chain=prefill["chain"],
            tx_hash="0x" + "ab" * 32,
            block_number=9,
        )

    async with pool.acquire() as conn:
        for event in ("sent", "confirmed", "confirmed"):  # the second confirmed: a duplicate
            await apply_action_result(conn, settings, result(event), now=datetime.now(UTC))
    assert figures()[2] == start[2] + 1


async def test_outbox_backlog_is_what_is_left_to_relay(
    own_stack: tuple[Settings, Pool],
) -> None:
    settings, pool = own_stack
    topic = f"{settings.kafka.topic_prefix}.intent-events"
    async with pool.acquire() as conn:
        for n in range(7):
            await enqueue(conn, topic=topic, key=str(n), payload=b"{}")
    publisher = KafkaPublisher(settings.kafka)
    await publisher.start()
    try:
        relay = OutboxRelay(pool, publisher, batch=3)
        seen = []
        while await relay.relay_once():
            seen.append(sample("intentd_outbox_backlog"))
        seen.append(sample("intentd_outbox_backlog"))
        async with pool.acquire() as conn:
            for n in range(5):
                await enqueue(conn, topic=topic, key=str(n), payload=b"{}")
        assert await relay.relay_once() == 3
        seen.append(sample("intentd_outbox_backlog"))
        # Another replica holds the relay's lock: this one reports 0, not a stale figure.
        async with pool.acquire() as other:
            await other.execute("SELECT pg_advisory_lock($1)", _RELAY_LOCK)
            try:
                assert await relay.relay_once() == 0
                seen.append(sample("intentd_outbox_backlog"))
            finally:
                await other.execute("SELECT pg_advisory_unlock($1)", _RELAY_LOCK)
    finally:
        await publisher.stop()
    assert seen == [4, 1, 0, 0, 2, 0]
