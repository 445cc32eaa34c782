"""Two, then three ``intentd lifecycle`` processes in one consumer group on Tansu (a real
Kafka-protocol broker) share the deposit and result partitions. Under a steady flow of
deposits one member is killed with ``kill -9`` and another is added; the flow lasts
until the last member has joined and credited deposits of its own. In the end every
deposit is credited once, every intent is where its deposits put it, and every intent's
events have unique ids and a gap-free sequence, in the event log and on Kafka.

Rebalance and takeover times are printed (``pytest -s``)."""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from tests.broker_tansu import tansu_broker
from tests.scale_out import Flow, Group, Message, on_tansu, tansu_env
from tests.support import TopicReader, new_intent

from intentd.adapters.postgres import Pool
from intentd.contract.record import IntentRow
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.messages import (
    DepositMessage,
    action_results_topic,
    deposit_id,
    deposits_topic,
    encode,
    events_topic,
)
from intentd.settings import Settings

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
"""Four rebalances and a flow on a loaded machine may take more than the default 120 s."""
CHAINS = ("BASE_TESTNET", "ARBITRUM_TESTNET")
BATCH = 4
"""Intents created at a time while the flow runs, their deposits interleaved."""
PACE = 0.15
"""Seconds between two deposits published: the steady flow a poller makes."""
OWN_DEPOSITS = 3
"""Deposits the last member credits itself before the flow ends."""


@pytest.fixture(scope="module")
def tansu(infra: dict[str, str]) -> Iterator[str]:
    yield from tansu_broker(infra)


@pytest.fixture
async def stack(own_stack: tuple[Settings, Pool], tansu: str) -> tuple[Settings, Pool]:
    """A database of this test alone and its topics on Tansu."""
    base, pool = own_stack
    return await on_tansu(base, tansu), pool


def plan(intent: IntentRow, n: int) -> list[int]:
    """The deposits of the n-th intent: exact, two that top up, over, under."""
    due = intent.total_due
    return [[due], [due // 3, due - due // 3], [due + 1_000_000], [due // 2]][n % 4]


def deposit(settings: Settings, intent: IntentRow, amount: int, index: int) -> DepositMessage:
    chain, token, tx = intent.source_chain, intent.token_in.lower(), "0x" + secrets.token_hex(32)
    return DepositMessage(
        id=deposit_id(chain, tx, token, 0),
        chain=chain,
        chain_id=settings.chains[chain].chain_id,
        tx_hash=tx,
        log_index=0,
        transfer_index=0,
        block_number=1_000 + index,
        block_hash="0x" + secrets.token_hex(32),
        block_time=int(datetime.now(UTC).timestamp()),
        token=token,
        from_address="0x" + "2" * 40,
        to_address=intent.intent_address.lower(),
        amount=amount,
    )


def deposit_flow(
    settings: Settings, pool: Pool, intents: list[IntentRow], plans: dict[int, list[int]]
) -> Flow:
    """`BATCH` new intents at a time (in `intents`, their deposits in `plans`), their
    deposits interleaved, every fifth one published twice as a poller that restarted
    before saving its cursor would; until the test ends the flow."""
    counter = itertools.count()

    async def batch(_: int) -> list[Message]:
        messages = []
        for _ in range(BATCH):
            n = len(intents)
            intent = await new_intent(pool, settings, chain=CHAINS[n % 2], amount="10")
            intents.append(intent)
            plans[intent.id] = plan(intent, n)
            messages += [deposit(settings, intent, amount, n) for amount in plans[intent.id]]
        messages.sort(key=lambda m: secrets.randbelow(1 << 30))  # interleave the intents
        return [
            Message(
                deposits_topic(settings.kafka.topic_prefix, m.chain),
                m.to_address.encode(),
                encode(m),
                m.tx_hash,
                copies=2 if next(counter) % 5 == 0 else 1,
            )
            for m in messages
        ]

    return Flow(settings.kafka.bootstrap_servers, batch, PACE)


async def test_lifecycle_members_share_the_work_and_survive_kill_9(
    stack: tuple[Settings, Pool], tmp_path: Path
) -> None:
    settings, pool = stack
    prefix = settings.kafka.topic_prefix
    intents: list[IntentRow] = []
    plans: dict[int, list[int]] = {}
    flow = deposit_flow(settings, pool, intents, plans)
    consumed = [deposits_topic(prefix, chain) for chain in CHAINS] + [action_results_topic(prefix)]
    group = Group(
        "lifecycle",
        tansu_env(settings, settings.kafka.bootstrap_servers),
        tmp_path,
        frozenset(f"{topic}:{p}" for topic in consumed for p in range(4)),
    )
    figures: dict[str, float] = {}
    try:
        started = time.time()
        group.add("a")
        figures["first member up and assigned"] = await group.rebalance(started)
        t0 = time.time()
        group.add("b")
        figures["second member joins"] = await group.rebalance(t0)
        flow.start()
        await flow.until_sent(10)  # a flow on, as 1.5 s of it when the machine is idle
        t0 = time.time()
        group.add("c")
        figures["third member joins (under load)"] = await group.rebalance(t0)
        await flow.until_sent(len(flow.sent) + 7)
        killed_at = group.members[0].kill()
        figures["kill -9 of a member: takeover"] = await group.rebalance(killed_at)
        assert flow.running, "the flow of deposits ended before the last member joined"
        t0 = time.time()
        last = group.add("d")
        figures["a new member joins (under load)"] = took = await group.rebalance(t0)
        joined, own = t0 + took, last.assignments()[-1][1]

        async def credited_by_the_last_member() -> bool:
            txs = flow.since(joined, own)
            return len(txs) >= OWN_DEPOSITS and await credited(pool, txs) >= OWN_DEPOSITS

        await flow.until(credited_by_the_last_member, "the last member credited deposits")
        published = {sent.ident: sent.at for sent in flow.sent}
        print(f"\n{len(flow.sent)} deposits published, every fifth twice, one each {PACE}s")
        settled = time.monotonic()
        await wait_until_credited(pool, plans)
        figures["last credit after the last deposit"] = time.monotonic() - settled
        figures["longest wait of a deposit (publish to credit)"] = await longest_wait(
            pool, published
        )
        await wait_until_relayed(pool, [i.id for i in intents])
        await check_events_on_kafka(settings, pool, [i.id for i in intents])
    finally:
        await flow.stop()
        exits = await group.stop()
    assert exits and set(exits.values()) == {0}, exits  # SIGTERM: every member stops cleanly
    group.print_figures("lifecycle scale-out on Tansu", figures)
    await check_final_state(pool, intents, plans)
    shares = {m.name: len(m.assignments()[-1][1]) for m in group.members if m.assignments()}
    assert all(shares.values()), shares


async def credited(pool: Pool, tx_hashes: list[str]) -> int:
    """How many of these deposits were credited."""
    query = "SELECT count(DISTINCT tx_hash) FROM deposits WHERE tx_hash = ANY($1)"
    count: int = await pool.fetchval(query, tx_hashes)
    return count


async def wait_until_credited(pool: Pool, plans: dict[int, list[int]], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        rows = await pool.fetch(
            "SELECT intent_id, count(*) AS n FROM deposits WHERE intent_id = ANY($1)"
            " GROUP BY intent_id",
            list(plans),
        )
        counted = {r["intent_id"]: r["n"] for r in rows}
        if all(counted.get(i, 0) >= len(amounts) for i, amounts in plans.items()):
            return
        assert time.monotonic() < deadline, {i: counted.get(i, 0) for i in plans}
        await asyncio.sleep(0.2)


async def longest_wait(pool: Pool, published: dict[str, float]) -> float:
    rows = await pool.fetch(
        "SELECT tx_hash, created_at FROM deposits WHERE tx_hash = ANY($1)", list(published)
    )
    return max(r["created_at"].timestamp() - published[r["tx_hash"]] for r in rows)


async def wait_until_relayed(pool: Pool, ids: list[int], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    keys = [str(i) for i in ids]
    query = "SELECT count(*) FROM outbox WHERE key = ANY($1) AND published_at IS NULL"
    while await pool.fetchval(query, keys):
        assert time.monotonic() < deadline, "the outbox was not relayed"
        await asyncio.sleep(0.2)


async def check_final_state(
    pool: Pool, intents: list[IntentRow], plans: dict[int, list[int]]
) -> None:
    ids = [i.id for i in intents]
    credited = await pool.fetch(
        "SELECT intent_id, amount FROM deposits WHERE intent_id = ANY($1)", ids
    )
    amounts: dict[int, list[int]] = defaultdict(list)
    for row in credited:
        amounts[row["intent_id"]].append(int(row["amount"]))
    rows = {
        r["id"]: r
        for r in await pool.fetch(
            "SELECT id, status, funding_status, received, event_sequence FROM intents"
            " WHERE id = ANY($1)",
            ids,
        )
    }
    for intent in intents:
        planned = plans[intent.id]
        assert sorted(amounts[intent.id]) == sorted(planned), intent.id  # each credited once
        row = rows[intent.id]
        total, due = sum(planned), intent.total_due
        assert int(row["received"]) == total
        assert row["status"] == (IntentStatus.FUNDED if total >= due else IntentStatus.PENDING)
        funding = (
            FundingStatus.EXACT
            if total == due
            else FundingStatus.OVERFUNDED
            if total > due
            else FundingStatus.UNDERFUNDED
        )
        assert row["funding_status"] == funding, intent.id
    events = await pool.fetch(
        "SELECT id, intent_id, sequence FROM intent_events WHERE intent_id = ANY($1)", ids
    )
    assert len({e["id"] for e in events}) == len(events)
    sequences: dict[int, list[int]] = defaultdict(list)
    for event in events:
        sequences[event["intent_id"]].append(event["sequence"])
    for intent in intents:
        seen = sorted(sequences[intent.id])
        assert seen == list(range(1, len(seen) + 1)), (intent.id, seen)
        assert seen and seen[-1] == rows[intent.id]["event_sequence"], intent.id


async def check_events_on_kafka(settings: Settings, pool: Pool, ids: list[int]) -> None:
    """Kafka carries exactly the logged events (a relay retried after a crash may publish
    one twice: same id, which subscribers dedupe)."""
    logged = {
        str(r["id"])
        for r in await pool.fetch("SELECT id FROM intent_events WHERE intent_id = ANY($1)", ids)
    }
    topic = events_topic(settings.kafka.topic_prefix)
    async with TopicReader(settings.kafka.bootstrap_servers, topic) as reader:
        await reader.wait_for(lambda ms: logged <= {orjson.loads(m.value)["id"] for m in ms})
        published = {orjson.loads(m.value)["id"] for m in reader.messages}
    mine = {str(i) for i in ids}
    assert {e for e in published if e in logged} == logged
    assert all(str(orjson.loads(m.value)["intent"]["id"]) in mine for m in reader.messages)
