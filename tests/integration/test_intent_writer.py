"""Group commit of new intents on real PostgreSQL: together, yet each create on its own."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from datetime import UTC, datetime
from uuid import UUID, uuid4

import asyncpg
import pytest
from tests.support import PAYEE

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.intent_inserts import AddressIndexes, PostgresIntentStore
from intentd.custody import IntentKeys
from intentd.intents.ports import NewIntent
from intentd.intents.service import IdempotencyConflict, IntentRequest, create_intent, plan_intent
from intentd.intents.writer import IntentWriter
from intentd.settings import Settings

pytestmark = pytest.mark.integration


def request(settings: Settings, amount: str = "5") -> IntentRequest:
    usdc = next(t.address for t in settings.chains["BASE_TESTNET"].tokens if t.symbol == "USDC")
    return IntentRequest(
        amount=amount,
        token_in=usdc,
        source_chain="BASE_TESTNET",
        destination_chain="ARBITRUM_TESTNET",
        recipient=PAYEE,
        refund_address=PAYEE,
        metadata={"run": secrets.token_hex(8)},
    )


def planned(settings: Settings, client: UUID, **changes: object) -> NewIntent:
    new = plan_intent(settings, request(settings), client_id=client, now=datetime.now(UTC))
    return dataclasses.replace(new, **changes)  # type: ignore[arg-type]


async def test_concurrent_creates_are_committed_together(settings: Settings, pool: Pool) -> None:
    keys = IntentKeys(settings.mnemonic())
    writer = IntentWriter(PostgresIntentStore(pool), keys)
    client = uuid4()

    rows = await asyncio.gather(
        *(
            create_intent(
                settings, writer, request(settings), client_id=client, now=datetime.now(UTC)
            )
            for _ in range(40)
        )
    )

    assert len({row.id for row in rows}) == 40
    assert len({row.address_index for row in rows}) == 40
    for row in rows:
        assert row.intent_address == keys.address(row.address_index).lower()
    # now() is the transaction's start: rows of one statement share created_at.
    assert len({row.created_at for row in rows}) <= 2
    async with pool.acquire() as conn:
        stored = await conn.fetchval("SELECT count(*) FROM intents WHERE client_id = $1", client)
    assert stored == 40


async def test_a_bad_row_fails_only_its_own_create(settings: Settings, pool: Pool) -> None:
    writer = IntentWriter(PostgresIntentStore(pool), IntentKeys(settings.mnemonic()))
    client = uuid4()
    good = [planned(settings, client) for _ in range(4)]
    bad = planned(settings, client, token_out_decimals=99)  # violates a CHECK

    results = await asyncio.gather(
        *(writer.insert(new) for new in [*good[:2], bad, *good[2:]]), return_exceptions=True
    )

    assert isinstance(results[2], asyncpg.CheckViolationError)
    written = [r for i, r in enumerate(results) if i != 2]
    assert all(r is not None and not isinstance(r, BaseException) for r in written)
    async with pool.acquire() as conn:
        stored = await conn.fetchval("SELECT count(*) FROM intents WHERE client_id = $1", client)
    assert stored == 4


async def test_one_idempotency_key_twice_in_one_batch(settings: Settings, pool: Pool) -> None:
    writer = IntentWriter(PostgresIntentStore(pool), IntentKeys(settings.mnemonic()))
    client, same = uuid4(), request(settings)

    def create(body: IntentRequest, key: str) -> asyncio.Future[object]:
        return asyncio.ensure_future(
            create_intent(
                settings, writer, body, client_id=client, now=datetime.now(UTC), idempotency_key=key
            )
        )

    first, second = await asyncio.gather(create(same, "k1"), create(same, "k1"))
    assert first.id == second.id  # type: ignore[attr-defined]

    results = await asyncio.gather(
        create(request(settings, "5"), "k2"),
        create(request(settings, "6"), "k2"),
        return_exceptions=True,
    )
    assert sum(isinstance(r, IdempotencyConflict) for r in results) == 1
    async with pool.acquire() as conn:
        stored = await conn.fetchval("SELECT count(*) FROM intents WHERE client_id = $1", client)
    assert stored == 2


async def test_a_cancelled_create_is_still_written(settings: Settings, pool: Pool) -> None:
    """The batch is shared: a create whose caller went away is still committed (a
    client retrying with its Idempotency-Key gets it)."""
    writer = IntentWriter(PostgresIntentStore(pool), IntentKeys(settings.mnemonic()))
    client = uuid4()
    alone = asyncio.ensure_future(writer.insert(planned(settings, client, idempotency_key="c")))
    kept = asyncio.ensure_future(writer.insert(planned(settings, client)))
    await asyncio.sleep(0)  # both are waiting for the write
    alone.cancel()

    assert await kept is not None
    with pytest.raises(asyncio.CancelledError):
        await alone
    async with pool.acquire() as conn:
        keys = await conn.fetch(
            "SELECT idempotency_key FROM intents WHERE client_id = $1 ORDER BY id", client
        )
    assert [r["idempotency_key"] for r in keys] == ["c", None]


async def test_writes_in_flight_together_never_share_an_index(
    settings: Settings, pool: Pool
) -> None:
    keys = IntentKeys(settings.mnemonic())
    writer = IntentWriter(
        PostgresIntentStore(pool, AddressIndexes(block=3)), keys, max_batch=4, max_in_flight=3
    )
    client = uuid4()

    rows = await asyncio.gather(*(writer.insert(planned(settings, client)) for _ in range(50)))

    indexes = [row.address_index for row in rows if row is not None]
    assert len(set(indexes)) == 50
    assert len({row.created_at for row in rows if row is not None}) >= 13  # 50 / 4 batches


async def test_an_index_take_outrun_by_another_draws_again(pool: Pool) -> None:
    indexes = AddressIndexes(block=3)
    async with pool.acquire() as one, pool.acquire() as two:
        first = await indexes.take(one, 1)  # two more are cached
        # The first take waits for its draw while the second empties the cache.
        big, small = await asyncio.gather(indexes.take(one, 4), indexes.take(two, 2))
    assert len(big) == 4
    taken = first + big + small
    assert len(set(taken)) == 7


async def test_creates_one_after_another_never_wait_for_a_later_one(
    settings: Settings, pool: Pool
) -> None:
    """A create queued just as a write ends starts a write of its own."""
    writer = IntentWriter(PostgresIntentStore(pool), IntentKeys(settings.mnemonic()))
    client = uuid4()

    async def one_by_one(count: int) -> None:
        for _ in range(count):
            await asyncio.wait_for(writer.insert(planned(settings, client)), 5)

    # Clients each waiting for their create before the next, with and without pauses.
    await one_by_one(5)
    await asyncio.gather(*(one_by_one(15) for _ in range(8)))
    async with pool.acquire() as conn:
        stored = await conn.fetchval("SELECT count(*) FROM intents WHERE client_id = $1", client)
    assert stored == 125
