"""The poller against a real anvil, PostgreSQL and the Kafka dev broker.

Each test runs its own automining anvil under a chain name of its own (so cursors in
the session database never mix), with the two test tokens deployed and a third,
unconfigured one. Deposits are read back from the chain's deposits topic.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
import structlog.testing
from aiohttp import ClientSession, web
from aiokafka import AIOKafkaConsumer, ConsumerRecord
from prometheus_client import REGISTRY
from tests.integration.poller_chain import Chain, chain_fixture, served_rpc
from tests.support import new_intent

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.cursor_store import CursorConflict, PostgresPollerStore
from intentd.chain.blocks import BlockHeader
from intentd.chain.evm.decoding import NATIVE
from intentd.composition.roles import poller_role
from intentd.faults import CRASH_EXIT_CODE
from intentd.indexer.poller import Poller
from intentd.indexer.reorg import Cursor
from intentd.settings import Settings
from intentd_dev.devchain import MINT, TRANSFER, call_data
from intentd_dev.devinfra.anvil import free_port, start_anvil

pytestmark = pytest.mark.integration

_names = itertools.count(1)
UNWATCHED = "0x" + "3" * 40


chain = chain_fixture("POLLTEST", 990_000, fake=True)


class Running:
    """A poller role running in the background of a test."""

    def __init__(self, settings: Settings, name: str, pool: Pool) -> None:
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(poller_role(settings, name, pool=pool)(self.stop))

    async def finish(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 20)


@pytest.fixture
async def polling(pool: Pool) -> AsyncIterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(chain: Chain, settings: Settings | None = None) -> Running:
        running = Running(settings or chain.settings, chain.name, pool)
        started.append(running)
        return running

    yield start
    for running in started:
        if not running.task.done():
            await running.finish()


async def intent_address(pool: Pool, settings: Settings) -> str:
    return (await new_intent(pool, settings)).intent_address


async def cursor(pool: Pool, name: str) -> Cursor | None:
    return await PostgresPollerStore(pool, name).load_cursor()


async def wait_for_cursor(pool: Pool, name: str, block: int, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while (current := await cursor(pool, name)) is None or current.number < block:
        assert time.monotonic() < deadline, f"cursor {current} never reached {block}"
        await asyncio.sleep(0.05)


class TopicReader:
    """Reads a whole topic from the beginning through a consumer group of its own."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=f"poller-test-{secrets.token_hex(4)}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        self.messages: list[ConsumerRecord[bytes, bytes]] = []

    async def __aenter__(self) -> TopicReader:
        await self._consumer.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._consumer.stop()

    async def wait_for(self, done: Callable[[list[Any]], bool], *, limit: float = 30.0) -> None:
        deadline = time.monotonic() + limit
        while not done(self.messages):
            assert time.monotonic() < deadline, f"timed out; got {json_values(self.messages)}"
            await self.drain(0.1)

    async def read_to_end(self, within: float = 30.0) -> None:
        """Read up to each partition's end as it is now: all that was published before
        (not whatever a fixed time reads, which a loaded machine makes less)."""
        deadline = time.monotonic() + within
        while not self._consumer.assignment():  # the group's assignment comes first
            assert time.monotonic() < deadline, "no partitions assigned"
            await self.drain(0.05)
        ends = await self._consumer.end_offsets(list(self._consumer.assignment()))
        for partition, end in ends.items():
            while await self._consumer.position(partition) < end:
                assert time.monotonic() < deadline, f"{partition} not read to its end"
                await self.drain(0.05)

    async def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            batches = await self._consumer.getmany(timeout_ms=50)
            for records in batches.values():
                self.messages.extend(records)


def json_values(messages: list[Any]) -> list[dict[str, Any]]:
    return [orjson.loads(m.value) for m in messages]


def to(address: str) -> Callable[[list[Any]], list[dict[str, Any]]]:
    def select(messages: list[Any]) -> list[dict[str, Any]]:
        # One address, one partition: these are in publishing order.
        found = [m for m in json_values(messages) if m["to_address"] == address]
        for m in found:
            if "amount" in m:
                m["amount"] = int(m["amount"])
        return found

    return select


async def test_native_and_token_deposits_are_published_once(
    chain: Chain, pool: Pool, settings: Settings, infra: dict[str, str], polling: Any
) -> None:
    a, b = await intent_address(pool, settings), await intent_address(pool, settings)
    rpc = chain.rpc
    native = await rpc.send(chain.payer, a, value=10**17)
    usdc = await rpc.send(chain.payer, chain.usdc, data=call_data(MINT, b, 5_000_000))
    await rpc.send(chain.payer, chain.fake, data=call_data(MINT, a, 9_000_000))  # ignored
    await rpc.send(chain.payer, chain.usdt, data=call_data(MINT, UNWATCHED, 1))  # not watched
    await rpc.send(chain.payer, a, value=0)  # zero value
    await rpc.send(chain.payer, chain.usdt, data=call_data(MINT, chain.payer, 10**9))
    usdt = await rpc.send(chain.payer, chain.usdt, data=call_data(TRANSFER, a, 7_000_000))
    head = await rpc.block_number()

    running = polling(chain)
    await wait_for_cursor(pool, chain.name, head)
    async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
        await reader.wait_for(lambda ms: len(to(a)(ms)) >= 2 and len(to(b)(ms)) >= 1)
        await reader.read_to_end()  # the cursor is past them: all that was published
        to_a, to_b = to(a)(reader.messages), to(b)(reader.messages)
        keys = {m.key for m in reader.messages}
    await running.finish()

    assert [(m["tx_hash"], m["token"], m["amount"], m["log_index"]) for m in to_a] == [
        (native, NATIVE, 10**17, -1),
        (usdt, chain.usdt, 7_000_000, 0),
    ]
    [deposit] = to_b
    assert (deposit["tx_hash"], deposit["token"], deposit["amount"]) == (
        usdc,
        chain.usdc,
        5_000_000,
    )
    assert deposit["from_address"] == "0x" + "0" * 40
    assert deposit["id"] == f"{chain.name}:{usdc}:{chain.usdc.lower()}:0"
    assert deposit["transfer_index"] == 0
    block = await rpc.rpc("eth_getBlockByNumber", hex(deposit["block_number"]), False)
    assert (deposit["block_hash"], deposit["block_time"]) == (
        block["hash"],
        int(block["timestamp"], 16),
    )
    assert {a.encode(), b.encode()} <= keys
    stored = await cursor(pool, chain.name)
    assert stored is not None
    assert stored.number >= head


async def test_an_intent_created_while_polling_is_watched_within_a_second(
    chain: Chain, pool: Pool, settings: Settings, infra: dict[str, str], polling: Any
) -> None:
    running = polling(chain)
    await wait_for_cursor(pool, chain.name, await chain.rpc.block_number())
    gauge = {"chain": chain.name}
    before = REGISTRY.get_sample_value("intentd_watched_addresses", gauge) or 0
    created = time.monotonic()
    address = await intent_address(pool, settings)
    while (REGISTRY.get_sample_value("intentd_watched_addresses", gauge) or 0) <= before:
        assert time.monotonic() - created < 1.0, "new intent not watched within a second"
        await asyncio.sleep(0.01)
    tx_hash = await chain.rpc.send(chain.payer, address, value=123)
    async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
        await reader.wait_for(lambda ms: bool(to(address)(ms)))
        [deposit] = to(address)(reader.messages)
    await running.finish()
    assert (deposit["tx_hash"], deposit["amount"]) == (tx_hash, 123)


async def test_a_reorg_retracts_the_orphaned_deposit_and_publishes_the_new_one(
    chain: Chain, pool: Pool, settings: Settings, infra: dict[str, str], polling: Any
) -> None:
    a, b = await intent_address(pool, settings), await intent_address(pool, settings)
    rpc = chain.rpc
    await rpc.mine(3)
    snapshot = await rpc.snapshot()
    orphaned = await rpc.send(chain.payer, a, value=10**15)
    await rpc.mine(2)
    running = polling(chain)
    await wait_for_cursor(pool, chain.name, await rpc.block_number())
    reorgs_before = REGISTRY.get_sample_value("intentd_reorgs_total", {"chain": chain.name}) or 0

    await rpc.revert(snapshot)  # the deposit's block and those after it are gone
    await rpc.send(chain.payer, chain.usdc, data=call_data(MINT, b, 4_000_000))
    replacement = await rpc.send(chain.payer, chain.usdc, data=call_data(MINT, b, 1_000_000))
    await rpc.mine(5)
    async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
        await reader.wait_for(
            lambda ms: any(m["kind"] == "retraction" for m in to(a)(ms)) and len(to(b)(ms)) >= 2
        )
        await reader.drain(0.5)
        to_a, to_b = to(a)(reader.messages), to(b)(reader.messages)
    await running.finish()

    assert [m["kind"] for m in to_a] == ["deposit", "retraction"]
    deposit, retraction = to_a
    assert retraction["id"] == deposit["id"] == f"{chain.name}:{orphaned}:{NATIVE}:-1"
    assert retraction["block_hash"] == deposit["block_hash"]
    assert [m["amount"] for m in to_b] == [4_000_000, 1_000_000]
    assert to_b[1]["tx_hash"] == replacement
    canonical = await rpc.rpc("eth_getBlockByNumber", hex(to_b[1]["block_number"]), False)
    assert to_b[1]["block_hash"] == canonical["hash"]
    assert REGISTRY.get_sample_value("intentd_reorgs_total", {"chain": chain.name}) == (
        reorgs_before + 1
    )
    rows = await pool.fetch(
        "SELECT tx_hash FROM published_deposits WHERE chain = $1 ORDER BY block_number", chain.name
    )
    assert orphaned not in [r["tx_hash"] for r in rows]


async def test_a_restart_resumes_from_the_cursor_without_a_gap(
    chain: Chain, pool: Pool, settings: Settings, infra: dict[str, str], polling: Any
) -> None:
    a = await intent_address(pool, settings)
    rpc = chain.rpc
    sent = [await rpc.send(chain.payer, a, value=1000 + n) for n in range(3)]
    first = polling(chain)
    await wait_for_cursor(pool, chain.name, await rpc.block_number())
    await first.finish()
    stopped_at = await cursor(pool, chain.name)

    for n in range(3, 6):  # while no poller runs
        sent.append(await rpc.send(chain.payer, a, value=1000 + n))
        await rpc.mine(2)
    second = polling(chain)
    await wait_for_cursor(pool, chain.name, await rpc.block_number())
    async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
        await reader.wait_for(lambda ms: len(to(a)(ms)) >= 6)
        await reader.read_to_end()  # the cursor is past them: all that was published
        found = to(a)(reader.messages)
    await second.finish()

    assert stopped_at is not None
    assert [m["tx_hash"] for m in found] == sent  # each once, in chain order
    blocks = [m["block_number"] for m in found]
    assert blocks == sorted(blocks)


async def test_a_second_poller_of_the_same_chain_is_refused(chain: Chain, pool: Pool) -> None:
    store, other = PostgresPollerStore(pool, chain.name), PostgresPollerStore(pool, chain.name)
    block = await chain.rpc.rpc("eth_getBlockByNumber", "0x1", False)
    header = BlockHeader(1, block["hash"], block["parentHash"], 0)
    await store.advance(Cursor(0, None), [header], [], drop_orphans=False)
    with pytest.raises(CursorConflict, match="another poller"):
        await other.advance(Cursor(0, None), [header], [], drop_orphans=False)
    with pytest.raises(CursorConflict):
        await other.rewind(Cursor(5, "0x" + "1" * 64), Cursor(0, "0x" + "2" * 64))
    assert await store.load_cursor() == Cursor(1, block["hash"])


class LimitedProvider:
    """A proxy in front of anvil that refuses each ``eth_getLogs`` over more than ``limit``
    blocks (the other calls of the batch are answered)."""

    def __init__(self, upstream: str, limit: int) -> None:
        self.upstream = upstream
        self.limit = limit
        self.refused = 0
        self.answered: list[int] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        async with (
            ClientSession() as session,
            session.post(
                self.upstream, data=body, headers={"Content-Type": "application/json"}
            ) as upstream,
        ):
            answer = await upstream.read()
        calls = orjson.loads(body)
        if not isinstance(calls, list):
            return web.Response(body=answer, content_type="application/json")
        answers = orjson.loads(answer)
        for call, item in zip(calls, answers, strict=True):
            if call["method"] != "eth_getLogs":
                continue
            query = call["params"][0]
            span = int(query["toBlock"], 16) - int(query["fromBlock"], 16) + 1
            if span > self.limit:
                self.refused += 1
                item.pop("result", None)
                item["error"] = {
                    "code": -32005,
                    "message": "query returned more than 10000 results",
                }
            else:
                self.answered.append(span)
        return web.json_response(answers)


@pytest.fixture
async def limited(chain: Chain) -> AsyncIterator[tuple[LimitedProvider, str]]:
    provider = LimitedProvider(chain.anvil.url, limit=4)
    async with served_rpc(provider.handle) as url:
        yield provider, url


async def test_log_queries_are_split_when_the_provider_limits_them(
    *,
    chain: Chain,
    pool: Pool,
    settings: Settings,
    infra: dict[str, str],
    polling: Any,
    limited: tuple[LimitedProvider, str],
) -> None:
    provider, url = limited
    a = await intent_address(pool, settings)
    for n in range(12):
        await chain.rpc.send(chain.payer, chain.usdc, data=call_data(MINT, a, 100 + n))
        await chain.rpc.mine(2)
    running = polling(chain, chain.configure(rpc_urls=[url], batch_size=40))
    await wait_for_cursor(pool, chain.name, await chain.rpc.block_number())
    async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
        await reader.wait_for(lambda ms: len(to(a)(ms)) >= 12)
        await reader.read_to_end()  # the cursor is past them: all that was published
        found = to(a)(reader.messages)
    await running.finish()
    assert sorted(m["amount"] for m in found) == [100 + n for n in range(12)]
    assert provider.refused > 0
    assert max(provider.answered) <= 4


async def test_a_dead_rpc_url_fails_over_to_a_live_one(
    chain: Chain, pool: Pool, settings: Settings, infra: dict[str, str], polling: Any
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    a = await intent_address(pool, settings)
    tx_hash = await chain.rpc.send(chain.payer, a, value=77)
    failovers = {"chain": chain.name}
    before = REGISTRY.get_sample_value("intentd_rpc_failovers_total", failovers) or 0
    running = polling(chain, chain.configure(rpc_urls=[dead, chain.anvil.url]))
    async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
        await reader.wait_for(lambda ms: bool(to(a)(ms)))
        [deposit] = to(a)(reader.messages)
    await running.finish()
    assert deposit["tx_hash"] == tx_hash
    assert (REGISTRY.get_sample_value("intentd_rpc_failovers_total", failovers) or 0) > before


async def test_a_second_poller_waits_as_a_standby_and_takes_over(
    chain: Chain, pool: Pool, settings: Settings, infra: dict[str, str], polling: Any
) -> None:
    a = await intent_address(pool, settings)
    first = polling(chain)
    await wait_for_cursor(pool, chain.name, await chain.rpc.block_number())
    with structlog.testing.capture_logs() as logs:
        standby = polling(chain)
        deadline = time.monotonic() + 30
        while not any(
            "waiting as a standby" in e["event"] and e.get("chain") == chain.name for e in logs
        ):
            assert not standby.task.done(), standby.task
            assert time.monotonic() < deadline, "the second poller never said it waits"
            await asyncio.sleep(0.02)
    assert not standby.task.done()  # waiting for the chain lock, not polling
    await first.finish()
    tx_hash = await chain.rpc.send(chain.payer, a, value=5)
    async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
        await reader.wait_for(lambda ms: bool(to(a)(ms)))
        await reader.drain(0.3)
        [deposit] = to(a)(reader.messages)
    await standby.finish()
    assert deposit["tx_hash"] == tx_hash


def toml_config(settings: Settings, name: str) -> str:
    """A config file for ``intentd poll --chain name`` equivalent to ``settings``."""
    config = settings.chains[name]
    tokens = "\n".join(
        f'[[chains.{name}.tokens]]\naddress = "{t.address}"\nsymbol = "{t.symbol}"\n'
        f'name = "{t.name}"\ndecimals = {t.decimals}\ncategory = "{t.category}"'
        for t in config.tokens
    )
    return (
        f'environment = "test"\n'
        f'[database]\nurl = "{settings.database.url.get_secret_value()}"\n'
        f'[kafka]\nbootstrap_servers = "{settings.kafka.bootstrap_servers}"\n'
        f'topic_prefix = "{settings.kafka.topic_prefix}"\n'
        f'[chains.{name}]\nchain_id = {config.chain_id}\nnetwork = "test"\n'
        f'rpc_urls = ["{config.rpc_urls[0]}"]\npoll_interval = 0.1\nstart_block = 0\n'
        f"{tokens}\n"
    )


async def test_a_crash_between_publishing_and_the_cursor_commit_republishes(
    chain: Chain, pool: Pool, settings: Settings, infra: dict[str, str], tmp_path: Any
) -> None:
    a = await intent_address(pool, settings)
    sent = [await chain.rpc.send(chain.payer, a, value=10 + n) for n in range(3)]
    config = tmp_path / "poll.toml"
    config.write_text(toml_config(chain.settings, chain.name))
    argv = [sys.executable, "-m", "intentd", "--config", str(config), "poll", "--chain", chain.name]
    crashing = {**os.environ, "INTENTD_CRASH_AT": "poller.after_publish"}
    crashed = await asyncio.to_thread(subprocess.run, argv, env=crashing, timeout=60, check=False)
    assert crashed.returncode == CRASH_EXIT_CODE
    assert await cursor(pool, chain.name) is None  # published, but the cursor never moved

    restarted = subprocess.Popen(argv, env=dict(os.environ))
    try:
        await wait_for_cursor(pool, chain.name, await chain.rpc.block_number())
    finally:
        restarted.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(restarted.wait, 30) == 0
    async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
        await reader.wait_for(lambda ms: len(to(a)(ms)) >= 6)
        await reader.read_to_end()  # the cursor is past them: all that was published
        found = to(a)(reader.messages)
    assert [m["tx_hash"] for m in found] == sent + sent  # the batch again, same ids: no loss
    assert len({m["id"] for m in found}) == 3


WARNED = "confirmed head is below the cursor"


async def test_a_reset_chain_below_the_cursor_is_reported_once_and_never_read(
    chain: Chain, pool: Pool, polling: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chain restarted from genesis (or the RPC URL now names another chain): the
    poller says so once, moves nothing and waits."""
    polls = 0
    refresh_head = Poller._refresh_head

    async def counted(self: Poller) -> None:
        nonlocal polls
        polls += 1
        await refresh_head(self)

    monkeypatch.setattr(Poller, "_refresh_head", counted)
    await chain.rpc.mine(12)
    head = await chain.rpc.block_number()
    first = polling(chain)
    await wait_for_cursor(pool, chain.name, head)
    await first.finish()
    before = await cursor(pool, chain.name)
    assert before is not None

    fresh = await asyncio.to_thread(start_anvil, chain.settings.chains[chain.name].chain_id)
    try:
        with structlog.testing.capture_logs() as logs:
            second = polling(chain, chain.configure(rpc_urls=[fresh.url]))
            deadline = time.monotonic() + 30
            told: int | None = None  # polls made when the warning was first seen
            while told is None or polls < told + 15:  # then 15 polls more: said once
                assert not second.task.done(), second.task
                assert time.monotonic() < deadline, f"warned after {told} polls; {polls} made"
                if told is None and any(WARNED in e["event"] for e in logs):
                    told = polls
                await asyncio.sleep(0.02)
            assert not second.task.done()
            await second.finish()
    finally:
        await asyncio.to_thread(fresh.stop)

    warnings = [e for e in logs if WARNED in e["event"]]
    assert len(warnings) == 1
    assert warnings[0]["log_level"] == "warning"
    assert warnings[0]["cursor"] == before.number
    assert warnings[0]["confirmed_head"] < before.number
    assert await cursor(pool, chain.name) == before
