"""The poll loop over in-memory fakes: ordering, reorgs, crashes, restarts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.log_capture import own_logs
from tests.unit.chain.chain_fakes import FAKE_TOKEN, USDC, FakeChain, FakeReader, Transfer, address
from tests.unit.indexer.indexer_fakes import Crash, FakeAddresses, FakePublisher, FakeStore

from intentd.chain.blocks import BlockRange
from intentd.chain.evm.decoding import NATIVE
from intentd.chain.evm.ports import RawRange
from intentd.indexer.poller import Poller
from intentd.indexer.reorg import Cursor, DeepReorgError, PublishedDeposit
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.messages import decode_chain_message
from intentd.settings import ChainConfig, TokenConfig

CHAIN = "LOOPCHAIN"
TOPIC = "t.deposits.LOOPCHAIN"
W1, W2, UNWATCHED = address(0xA1), address(0xA2), address(0xB0)


def config(**overrides: Any) -> ChainConfig:
    fields: dict[str, Any] = {
        "name": CHAIN, "chain_id": 84532, "network": "test", "rpc_urls": ["http://127.0.0.1:9"],
        "poll_interval": 0.01, "batch_size": 4, "start_block": 0,
        "tokens": [TokenConfig(address=USDC, symbol="USDC", name="USD Coin", decimals=6,
                               category="stablecoin")],
    }  # fmt: skip
    fields.update(overrides)
    return ChainConfig(**fields)


class Harness:
    def __init__(
        self, chain: FakeChain | None = None, *, store: FakeStore | None = None, **overrides: Any
    ) -> None:
        self.chain = chain or FakeChain()
        self.reader = FakeReader(self.chain)
        self.store = store or FakeStore()
        self.publisher = FakePublisher()
        self.addresses = FakeAddresses([W1, W2])
        self.config = config(**overrides)

    def poller(self, *, idle_refresh: float = 0.01, retention: timedelta | None = None) -> Poller:
        return Poller(
            self.config, reader=self.reader, store=self.store, publisher=self.publisher,
            watched=WatchedIntents(self.addresses, retention=retention), topic=TOPIC,
            idle_refresh=idle_refresh,
            torn_backoff=0.001,
            wall_clock_ms=lambda: 1_700_000_000_000,
        )  # fmt: skip

    async def run_until(
        self, done: Callable[[Poller], bool], *, poller: Poller | None = None, limit: float = 5.0
    ) -> Poller:
        poller = poller or self.poller()
        stop = asyncio.Event()
        task = asyncio.create_task(poller.run(stop))
        deadline = time.monotonic() + limit
        try:
            while not done(poller):
                if task.done():
                    task.result()  # raises what the poller raised
                    raise AssertionError("poller returned before the condition held")
                assert time.monotonic() < deadline, f"timed out; cursor {poller.cursor}"
                await asyncio.sleep(0.002)
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.shield(task), 5)
        return poller

    async def catch_up(self, **kwargs: Any) -> Poller:
        head = self.chain.head - (self.config.confirmations - 1)
        return await self.run_until(lambda p: p.cursor.number >= head, **kwargs)

    def published(self) -> list[dict[str, Any]]:
        return [decode_chain_message(m.value).model_dump() for m in self.publisher.messages]


def deposits(messages: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(m["to_address"], m["amount"]) for m in messages if m["kind"] == "deposit"]


async def test_deposits_to_watched_addresses_are_published_in_chain_order() -> None:
    h = Harness()
    h.chain.mine(count=2)
    h.chain.mine(
        Transfer(W1, 10**18),
        Transfer(W2, 5_000_000, token=USDC),
        Transfer(W1, 7, token=FAKE_TOKEN),  # a token the chain does not list
        Transfer(UNWATCHED, 1),
        Transfer(W2, 0),  # zero value
        Transfer(W2, 0, token=USDC),  # zero amount
    )
    h.chain.mine(Transfer(W2, 3), count=5)
    poller = await h.catch_up()

    messages = h.published()
    assert deposits(messages) == [(W1, 10**18), (W2, 5_000_000), (W2, 3)]
    native, token, _ = messages
    assert (native["token"], native["log_index"], native["block_number"]) == (NATIVE, -1, 3)
    assert (token["token"], token["log_index"], token["chain_id"]) == (USDC, 0, 84532)
    assert (native["transfer_index"], token["transfer_index"]) == (-1, 0)
    assert native["id"] == f"{CHAIN}:{native['tx_hash']}:{NATIVE}:-1"
    assert token["id"] == f"{CHAIN}:{token['tx_hash']}:{USDC}:0"
    assert native["block_time"] == 1_700_000_003
    assert native["observed_at_ms"] == 1_700_000_000_000
    assert [(m.topic, m.key) for m in h.publisher.messages] == [
        (TOPIC, W1),
        (TOPIC, W2),
        (TOPIC, W2),
    ]
    assert poller.cursor == Cursor(h.chain.head, h.chain.blocks[-1]["hash"])
    assert h.store.cursor == poller.cursor
    assert len(h.store.published) == 3


async def test_blocks_are_read_in_batches_that_cover_every_block_once() -> None:
    h = Harness(batch_size=3)
    h.chain.mine(count=10)
    await h.catch_up()
    covered = [n for blocks in h.reader.reads for n in blocks]
    assert covered == list(range(h.chain.head + 1))
    assert all(len(blocks) <= 3 for blocks in h.reader.reads)


async def test_blocks_wait_for_their_confirmations() -> None:
    h = Harness(confirmations=3)
    h.chain.mine(count=3)
    h.chain.mine(Transfer(W1, 5))  # block 4: needs blocks 5 and 6 on top
    poller = await h.catch_up()
    assert poller.cursor.number == 2
    assert h.published() == []
    h.chain.mine(count=2)
    await h.catch_up(poller=poller)
    assert deposits(h.published()) == [(W1, 5)]


async def test_latest_starts_at_the_confirmed_head() -> None:
    h = Harness(start_block="latest", confirmations=2)
    h.chain.mine(Transfer(W1, 1), count=5)  # block 1 holds a deposit from before the start
    poller = h.poller()
    await poller.start()
    assert poller.cursor.number == h.chain.head - 2
    h.chain.mine(Transfer(W1, 2), count=2)
    await h.catch_up(poller=poller)
    assert deposits(h.published()) == [(W1, 2)]


async def test_latest_is_pinned_at_start_so_a_restart_before_the_first_batch_misses_nothing() -> (
    None
):
    h = Harness(start_block="latest", confirmations=2)
    h.chain.mine(count=5)
    started = h.poller()
    await started.start()  # then the poller dies (an outage) before it processes a batch
    pinned = started.cursor.number
    h.chain.mine(Transfer(W1, 7), count=6)  # paid while it was away
    restarted = await h.catch_up(poller=h.poller())
    assert restarted.cursor.number > pinned
    assert deposits(h.published()) == [(W1, 7)]  # the restart went on from the pin


async def test_a_restart_resumes_after_the_cursor() -> None:
    h = Harness()
    h.chain.mine(Transfer(W1, 1), count=3)
    await h.catch_up()
    reads_before = len(h.reader.reads)
    h.chain.mine(Transfer(W2, 2), count=3)
    await h.catch_up(poller=h.poller())
    first_new = h.reader.reads[reads_before]
    assert first_new.first == 4
    assert deposits(h.published()) == [(W1, 1), (W2, 2)]


async def test_a_crash_after_publishing_republishes_the_batch_with_the_same_ids() -> None:
    h = Harness(store=FakeStore(crash_on_advance=1))
    h.chain.mine(Transfer(W1, 1), Transfer(W2, 2, token=USDC), count=2)
    with pytest.raises(Crash):
        await h.catch_up()
    assert h.store.cursor is None
    first_ids = [m["id"] for m in h.published()]
    await h.catch_up()
    ids = [m["id"] for m in h.published()]
    assert ids[: len(first_ids)] == first_ids
    assert set(ids) == set(first_ids)  # the same deposits again, nothing new, nothing lost
    assert len(h.store.published) == 2


async def test_a_failed_publish_does_not_move_the_cursor() -> None:
    h = Harness()
    h.publisher.fail_next = 1
    h.chain.mine(Transfer(W1, 1))
    with pytest.raises(Crash):
        await h.catch_up()
    assert h.store.cursor is None
    await h.catch_up()
    assert deposits(h.published()) == [(W1, 1)]


def reorgs() -> float:
    return REGISTRY.get_sample_value("intentd_reorgs_total", {"chain": CHAIN}) or 0.0


async def test_a_reorg_retracts_deposits_the_new_chain_lacks_and_publishes_its_own() -> None:
    h = Harness()
    h.chain.mine(count=3)  # blocks 1..3
    lost = Transfer(W1, 100)
    kept = Transfer(W2, 200, token=USDC)
    h.chain.mine(lost, kept)  # block 4
    h.chain.mine(count=2)  # 5, 6
    poller = await h.catch_up()
    old_block_4 = h.chain.blocks[4]["hash"]
    before = reorgs()

    h.chain.fork(keep=3)
    h.chain.mine(Transfer(W1, 300), kept)  # new block 4: `kept` mined again, `lost` is gone
    h.chain.mine(count=4)
    h.publisher.messages.clear()
    await h.catch_up(poller=poller)

    messages = h.published()
    assert [m["kind"] for m in messages] == ["retraction", "deposit", "deposit"]
    retraction = messages[0]
    assert (retraction["tx_hash"], retraction["block_hash"]) == (lost.tx_hash, old_block_4)
    assert retraction["id"] == f"{CHAIN}:{lost.tx_hash}:{NATIVE}:-1"
    assert retraction["to_address"] == W1
    assert deposits(messages) == [(W1, 300), (W2, 200)]
    assert messages[2]["block_hash"] == h.chain.blocks[4]["hash"]
    assert reorgs() == before + 1
    assert {p.block_hash for p in h.store.published.values()} == {h.chain.blocks[4]["hash"]}


async def test_a_transfer_mined_again_at_another_log_index_keeps_its_identity() -> None:
    h = Harness()
    h.chain.mine(count=2)
    moved = Transfer(W2, 200, token=USDC)
    h.chain.mine(moved)  # block 3, log 0 of the block
    h.chain.mine(count=2)
    poller = await h.catch_up()
    [first] = h.published()

    h.chain.fork(keep=2)
    other = Transfer(W1, 5, token=USDC, nonce=1)
    h.chain.mine(other, Transfer(UNWATCHED, 9, token=USDC), moved)  # now log 2 of block 3
    h.chain.mine(count=3)
    h.publisher.messages.clear()
    await h.catch_up(poller=poller)

    messages = h.published()
    assert [m["kind"] for m in messages] == ["deposit", "deposit"]  # nothing retracted
    again = next(m for m in messages if m["tx_hash"] == moved.tx_hash)
    assert (first["log_index"], again["log_index"]) == (0, 2)
    assert again["id"] == first["id"] == f"{CHAIN}:{moved.tx_hash}:{USDC}:0"
    assert again["block_hash"] == h.chain.blocks[3]["hash"] != first["block_hash"]


async def test_orphans_left_by_a_crash_after_the_rewind_are_retracted_after_restart() -> None:
    h = Harness()
    h.chain.mine()
    h.chain.mine(Transfer(W1, 1))  # block 2
    h.chain.mine(count=2)
    await h.catch_up()
    orphan_block = h.chain.blocks[2]["hash"]
    h.chain.fork(keep=1)
    h.chain.mine(count=5)
    h.store.crash_on_advance = 1  # the rewind commits, the next batch dies
    with pytest.raises(Crash):
        await h.catch_up()
    assert h.store.cursor is not None
    assert h.store.cursor.number == 1
    h.publisher.messages.clear()
    await h.catch_up()
    [retraction] = h.published()
    assert (retraction["kind"], retraction["block_hash"]) == ("retraction", orphan_block)


async def test_a_reorg_deeper_than_the_window_stops_the_poller() -> None:
    h = Harness(store=FakeStore(window=3))
    h.chain.mine(count=9)
    await h.catch_up()
    h.chain.fork(keep=4)
    h.chain.mine(count=8)
    with pytest.raises(DeepReorgError):
        await h.catch_up()
    assert h.store.cursor is not None
    assert h.store.cursor.number == 9  # nothing guessed, nothing moved


class TornOnce(FakeReader):
    """Answers the first read with blocks from two branches, as a node might mid-reorg."""

    def __init__(self, chain: FakeChain, other: FakeChain) -> None:
        super().__init__(chain)
        self.other = other
        self.torn = 0

    async def read_range(self, blocks: BlockRange) -> RawRange:
        raw = await super().read_range(blocks)
        if self.torn == 0 and len(blocks) > 1:
            self.torn += 1
            return RawRange(
                [raw.blocks[0], *self.other.blocks[blocks.first + 1 : blocks.last + 1]],
                [self.answer(blocks, [])],
            )
        return raw


async def test_a_batch_read_across_a_reorg_is_read_again() -> None:
    h = Harness()
    for nonce in range(6):
        h.chain.mine(Transfer(W1, 1, nonce=nonce))
    other = FakeChain(branch=99)  # another genesis: nothing links across the two
    other.mine(count=6)
    h.reader = TornOnce(h.chain, other)
    await h.catch_up()
    assert h.reader.reads.count(BlockRange(0, 3)) == 2
    assert len(deposits(h.published())) == 6


async def test_logs_from_another_fork_make_the_batch_read_again() -> None:
    h = Harness()
    h.chain.mine(count=2)
    h.chain.mine(Transfer(W2, 9, token=USDC))  # block 3
    forked = False

    def fork_between(blocks: BlockRange) -> None:
        nonlocal forked
        if not forked and 3 in blocks:
            forked = True
            h.chain.fork(keep=2)
            h.chain.mine(Transfer(W2, 9, token=USDC), count=2)

    h.reader.between_blocks_and_logs = fork_between
    await h.catch_up()
    assert deposits(h.published()) == [(W2, 9)]
    assert h.published()[0]["block_hash"] == h.chain.blocks[3]["hash"]


async def test_a_node_that_keeps_answering_inconsistently_is_waited_out_not_exited() -> None:
    h = Harness()
    h.chain.mine(Transfer(W2, 9, token=USDC), count=3)
    good_hash = h.chain.logs_by_block[1][0]["blockHash"]
    failures = {"chain": CHAIN, "reason": "inconsistent"}
    before = REGISTRY.get_sample_value("intentd_poller_read_failures_total", failures) or 0

    def lying(blocks: BlockRange) -> None:
        h.chain.logs_by_block[1][0]["blockHash"] = "0x" + "f" * 64

    def failed() -> float:
        return (REGISTRY.get_sample_value("intentd_poller_read_failures_total", failures) or 0) - (
            before
        )

    h.reader.between_blocks_and_logs = lying
    poller = h.poller()
    with own_logs() as logs:
        await h.run_until(lambda p: failed() >= 8, poller=poller)
    assert h.store.cursor is None and h.published() == []  # nothing decided on it
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == [
        "chain read failed; reading the same blocks again"
    ]  # one line for the outage, not one per read

    h.reader.between_blocks_and_logs = None  # the node answers consistently again
    h.chain.logs_by_block[1][0]["blockHash"] = good_hash
    await h.catch_up(poller=poller)
    assert deposits(h.published()) == [(W2, 9)]


async def test_an_intent_committed_while_its_block_is_read_is_matched() -> None:
    h = Harness()
    late = address(0xC0)
    h.chain.mine(count=2)
    h.chain.mine(Transfer(late, 42))

    def commit_intent(blocks: BlockRange) -> None:
        if 3 in blocks and late not in h.addresses.addresses:
            h.addresses.addresses.append(late)

    h.reader.before_read = commit_intent
    await h.catch_up()
    assert deposits(h.published()) == [(late, 42)]


async def test_new_intents_are_watched_while_idle() -> None:
    h = Harness(poll_interval=30.0)
    poller = await h.catch_up(poller=h.poller(idle_refresh=0.01))
    new = address(0xD0)
    h.addresses.addresses.append(new)
    stop = asyncio.Event()
    task = asyncio.create_task(poller.run(stop))
    start = time.monotonic()
    while not poller._watched.addresses.contains_hex(new):
        assert time.monotonic() - start < 1.0
        await asyncio.sleep(0.005)
    stop.set()
    await asyncio.wait_for(task, 1.0)  # stop is seen at once, not after poll_interval


async def test_stop_before_start_returns_cleanly() -> None:
    h = Harness()
    stop = asyncio.Event()
    stop.set()
    await h.poller().run(stop)
    assert h.store.cursor is None


async def test_published_rows_keep_only_the_window() -> None:
    h = Harness(store=FakeStore(window=5), batch_size=2)
    for nonce in range(12):
        h.chain.mine(Transfer(W1, 1, nonce=nonce))
    await h.catch_up()
    assert sorted(h.store.blocks) == list(range(8, 13))
    assert sorted(p.block_number for p in h.store.published.values()) == list(range(8, 13))
    assert all(isinstance(p, PublishedDeposit) for p in h.store.published.values())


async def test_an_address_stops_being_watched_a_retention_after_its_intent_ended() -> None:
    # Hourly blocks; W1's intent ended at block 2's time, W2's is live. A day's retention
    # (plus the reorg margin) ends between blocks 27 and 28.
    h = Harness(FakeChain(block_seconds=3600))
    h.addresses.ended[W1] = datetime.fromtimestamp(1_700_000_000 + 2 * 3600, UTC)
    for n in range(40):
        h.chain.mine(Transfer(W1, 1, nonce=n), Transfer(W2, 2, token=USDC, nonce=n))
    poller = h.poller(retention=timedelta(days=1))
    await h.catch_up(poller=poller)
    late = [m["block_number"] for m in h.published() if m["to_address"] == W1]
    assert late == list(range(1, 28))  # a late payment within the window is published
    assert len([m for m in h.published() if m["to_address"] == W2]) == 40
    assert REGISTRY.get_sample_value("intentd_watched_addresses", {"chain": CHAIN}) == 1
