"""The poller over a provider that lags or lies: a load balancer whose backends are
blocks apart, a node on another fork, a failover URL behind the first, range refusals.

The poller reads through the real :class:`EvmChainReader` and :class:`JsonRpcClient`
over :class:`~tests.unit.adapters.evm.rpc_fakes.FakeProvider`; every deposit must be
published exactly once, none retracted, the cursor never moved back or past what the
answers prove.
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.adapters.evm.rpc_fakes import LIVE, FakeProvider, Node, client, counter
from tests.unit.chain.chain_fakes import USDC, FakeChain, Transfer, address
from tests.unit.indexer.indexer_fakes import FakeAddresses, FakePublisher, FakeStore
from tests.unit.indexer.test_poll_loop import config

from intentd.adapters.evm.chain_reader import EvmChainReader
from intentd.indexer.poller import Poller
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.messages import decode_chain_message

CHAIN = "LAGCHAIN"
W1, W2 = address(0xA1), address(0xA2)
STALE = "http://stale.example"

Route = Callable[[str, int, list[dict[str, Any]]], int]


def methods(calls: list[dict[str, Any]]) -> set[str]:
    return {c["method"] for c in calls}


class Setup:
    """A poller of ``chain`` through a provider whose first node is the chain itself."""

    def __init__(self, chain: FakeChain, *, urls: list[str] | None = None, **overrides: Any):
        self.chain = chain
        self.provider = FakeProvider(chain)
        self.urls = urls or [LIVE]
        self.reader = EvmChainReader(
            client(self.provider, CHAIN, self.urls), [USDC], max_log_range=100
        )
        self.store = FakeStore()
        self.publisher = FakePublisher()
        self.config = config(name=CHAIN, **overrides)

    def node(self, node: Node) -> int:
        self.provider.nodes.append(node)
        return len(self.provider.nodes) - 1

    def poller(self) -> Poller:
        return Poller(
            self.config, reader=self.reader, store=self.store, publisher=self.publisher,
            watched=WatchedIntents(FakeAddresses([W1, W2])), topic="t.deposits.LAGCHAIN",
            idle_refresh=0.001, torn_backoff=0.001,
        )  # fmt: skip

    async def run_until(self, done: Callable[[], bool], poller: Poller | None = None) -> Poller:
        poller = poller or self.poller()
        stop = asyncio.Event()
        task = asyncio.create_task(poller.run(stop))
        deadline = time.monotonic() + 10
        try:
            while not done():
                if task.done():
                    task.result()  # raises what the poller raised
                    raise AssertionError("the poller returned before the condition held")
                assert time.monotonic() < deadline, f"timed out; cursor {poller.cursor}"
                await asyncio.sleep(0.001)
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.shield(task), 5)
        return poller

    async def catch_up(self, poller: Poller | None = None) -> Poller:
        head = self.chain.head
        return await self.run_until(
            lambda: self.store.cursor is not None and self.store.cursor.number >= head, poller
        )

    def messages(self) -> list[dict[str, Any]]:
        return [decode_chain_message(m.value).model_dump() for m in self.publisher.messages]

    def deposits(self) -> list[tuple[str, int, int]]:
        return sorted(
            (m["to_address"], int(m["amount"]), m["block_number"])
            for m in self.messages()
            if m["kind"] == "deposit"
        )

    def retractions(self) -> list[dict[str, Any]]:
        return [m for m in self.messages() if m["kind"] == "retraction"]


def chain_with(deposits: dict[int, list[Transfer]], head: int) -> FakeChain:
    chain = FakeChain()
    for n in range(1, head + 1):
        chain.mine(*deposits.get(n, []))
    return chain


async def test_logs_cut_at_a_lagging_nodes_head_are_not_read_as_no_deposits() -> None:
    # Blocks 1..8; the deposit is in block 7. The node answering the log queries is 3
    # blocks behind (head 5) for the first 30 POSTs and cuts eth_getLogs at its head.
    chain = chain_with({7: [Transfer(W1, 5_000_000, token=USDC)]}, head=8)
    setup = Setup(chain)
    behind = setup.node(Node(chain, lag=3))
    setup.provider.route = lambda url, post, calls: (
        behind if "eth_getLogs" in methods(calls) and post < 30 else 0
    )
    await setup.catch_up()
    assert setup.deposits() == [(W1, 5_000_000, 7)]
    assert setup.retractions() == []


async def test_logs_of_a_node_on_another_fork_are_not_read_as_no_deposits() -> None:
    # The log node follows a fork from block 6 whose blocks hold no transfer at all.
    chain = chain_with({7: [Transfer(W1, 5_000_000, token=USDC)]}, head=8)
    fork = copy.deepcopy(chain)
    fork.fork(keep=5)
    fork.mine(count=3)
    setup = Setup(chain)
    forked = setup.node(Node(fork))
    setup.provider.route = lambda url, post, calls: (
        forked if "eth_getLogs" in methods(calls) and post < 30 else 0
    )
    await setup.catch_up()
    assert setup.deposits() == [(W1, 5_000_000, 7)]


async def test_a_node_that_imports_the_last_block_while_answering_proves_nothing() -> None:
    # The log node is one block behind and imports block 8 right after the first call
    # of a POST: logs asked before the import stop at 7, a block asked after it is 8.
    chain = chain_with({8: [Transfer(W1, 9, token=USDC)]}, head=8)
    setup = Setup(chain, batch_size=8)
    catching_up = Node(chain, lag=1)
    index = setup.node(catching_up)
    imported: list[int] = []

    def route(url: str, post: int, calls: list[dict[str, Any]]) -> int:
        if "eth_getLogs" in methods(calls) and len(imported) < 3:
            catching_up.lag = 1
            return index
        return 0

    def between(node: Node) -> None:
        if node is catching_up and catching_up.lag:
            catching_up.lag = 0
            imported.append(1)

    setup.provider.route = route
    setup.provider.between_calls = between
    await setup.catch_up()
    assert setup.deposits() == [(W1, 9, 8)]


async def test_a_node_that_reorgs_while_answering_proves_nothing() -> None:
    # The log node reorgs away from our block 8 after the first call of the POST (an
    # empty block 8 on its new branch) and back before the next POST.
    chain = chain_with({8: [Transfer(W1, 9, token=USDC)]}, head=8)
    other = copy.deepcopy(chain)
    other.fork(keep=7)
    other.mine()
    setup = Setup(chain, batch_size=8)
    ours, theirs = Node(chain), Node(other)
    flipping = setup.node(ours)
    flips: list[int] = []

    def route(url: str, post: int, calls: list[dict[str, Any]]) -> int:
        return flipping if "eth_getLogs" in methods(calls) and len(flips) < 3 else 0

    def between(node: Node) -> None:
        if node is ours and setup.provider.serving is ours:
            setup.provider.serving = theirs  # the rest of this POST is answered on the fork
            flips.append(1)

    setup.provider.route = route
    setup.provider.between_calls = between
    await setup.catch_up()
    assert setup.deposits() == [(W1, 9, 8)]


async def test_a_one_block_range_refusal_reads_the_block_from_its_receipts() -> None:
    chain = chain_with({3: [Transfer(W1, 7, token=USDC), Transfer(W2, 8)]}, head=5)
    setup = Setup(chain)
    setup.provider.log_limit = 0  # every eth_getLogs refused, one block too
    before = counter("intentd_rpc_log_refusals_total", chain=CHAIN, action="from_receipts")
    await setup.catch_up()
    assert setup.deposits() == [(W1, 7, 3), (W2, 8, 3)]
    assert counter("intentd_rpc_log_refusals_total", chain=CHAIN, action="from_receipts") > before


async def test_a_refusal_that_lasts_holds_the_poller_at_the_block_without_exiting() -> None:
    chain = chain_with({3: [Transfer(W1, 7, token=USDC)]}, head=5)
    setup = Setup(chain)
    setup.provider.log_limit = 0
    setup.provider.receipts_refused = 40  # block receipts refused too, for a while
    await setup.catch_up()
    assert setup.deposits() == [(W1, 7, 3)]
    assert setup.provider.receipts_refused == 0


async def test_a_head_read_ahead_of_the_blocks_is_waited_for_never_skipped() -> None:
    # eth_blockNumber is answered by the node ahead; blocks, logs and receipts by a node
    # two blocks behind for the first 40 POSTs (null blocks, null receipts).
    chain = chain_with({4: [Transfer(W1, 3)], 5: [Transfer(W2, 4, token=USDC)]}, head=6)
    setup = Setup(chain, batch_size=2)
    behind = setup.node(Node(chain, lag=2))
    setup.provider.route = lambda url, post, calls: (
        0 if methods(calls) == {"eth_blockNumber"} or post >= 40 else behind
    )
    await setup.catch_up()
    assert setup.deposits() == [(W1, 3, 4), (W2, 4, 5)]


async def test_a_failover_to_a_url_three_blocks_behind_neither_rewinds_nor_skips() -> None:
    chain = chain_with({n: [Transfer(W1, n, nonce=n)] for n in range(1, 7)}, head=6)
    setup = Setup(chain, urls=[LIVE, STALE])
    stale = setup.node(Node(chain, lag=3))
    setup.provider.route = lambda url, post, calls: stale if url == STALE else 0
    poller = await setup.catch_up()

    setup.provider.dead.add(LIVE)  # every call fails over to the stale URL from now on
    for n in range(7, 10):
        chain.mine(Transfer(W2, n, token=USDC, nonce=n))
    at_failover = setup.store.cursor
    assert at_failover is not None

    def caught_up_later(url: str, post: int, calls: list[dict[str, Any]]) -> int:
        if url == STALE and len(setup.provider.posts) > 60:
            setup.provider.nodes[stale].lag = 0  # the stale node catches up
        return stale if url == STALE else 0

    setup.provider.route = caught_up_later
    cursors: list[int] = []

    def watch() -> bool:
        cursor = setup.store.cursor
        assert cursor is not None
        cursors.append(cursor.number)
        return cursor.number >= 9

    await setup.run_until(watch, poller)
    assert cursors == sorted(cursors) and cursors[0] == at_failover.number
    assert setup.retractions() == []
    assert setup.deposits() == [
        *[(W1, n, n) for n in range(1, 7)],
        *[(W2, n, n) for n in range(7, 10)],
    ]


async def test_hashes_from_a_lagging_node_do_not_rewind_the_cursor() -> None:
    # After block 8, one read of block 9 comes from a node on another fork (its block 9
    # does not extend ours), and the walk-back's hashes from a node 3 blocks behind:
    # it has no block at 6..8. That is no evidence of a reorg; nothing is retracted.
    chain = chain_with({n: [Transfer(W1, n, nonce=n)] for n in range(6, 9)}, head=8)
    fork = copy.deepcopy(chain)
    fork.fork(keep=5)
    fork.mine(count=4)
    setup = Setup(chain, batch_size=2)
    poller = await setup.catch_up()
    chain.mine()  # block 9
    forked = setup.node(Node(fork))
    behind = setup.node(Node(chain, lag=4))
    phase = ["fork"]

    def route(url: str, post: int, calls: list[dict[str, Any]]) -> int:
        if phase[0] != "fork" or methods(calls) == {"eth_blockNumber"}:
            return 0
        if len(calls) > 3 and all(c["params"][1] is False for c in calls):
            phase[0] = "done"  # the walk-back's hashes
            return behind
        return forked

    setup.provider.route = route
    await setup.run_until(
        lambda: setup.store.cursor is not None and setup.store.cursor.number >= 9, poller
    )
    assert setup.retractions() == []
    assert setup.deposits() == [(W1, n, n) for n in range(6, 9)]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    lag=st.integers(1, 4),
    share=st.floats(0.2, 0.8),
    blocks=st.lists(st.tuples(st.integers(1, 24), st.booleans()), min_size=1, max_size=8),
    batch=st.integers(1, 6),
)
async def test_every_deposit_is_published_once_whatever_node_answers_each_call(
    seed: int, lag: int, share: float, blocks: list[tuple[int, bool]], batch: int
) -> None:
    rng = random.Random(seed)
    wanted: dict[int, list[Transfer]] = {}
    for nonce, (n, token) in enumerate(blocks):
        transfer = Transfer(W1, 1000 + nonce, token=USDC if token else None, nonce=nonce)
        wanted.setdefault(n, []).append(transfer)
    chain = chain_with(wanted, head=24)
    setup = Setup(chain, batch_size=batch)
    behind = Node(chain, lag=lag)
    index = setup.node(behind)

    def route(url: str, post: int, calls: list[dict[str, Any]]) -> int:
        behind.lag = rng.randint(1, lag)
        return index if rng.random() < share and post < 400 else 0

    def between(node: Node) -> None:
        if node is behind and rng.random() < 0.2:
            behind.lag = max(behind.lag - 1, 0)  # a block imported while it answers

    setup.provider.route = route
    setup.provider.between_calls = between
    await setup.catch_up()
    expected = sorted((W1, 1000 + nonce, n) for nonce, (n, _) in enumerate(blocks))
    assert setup.deposits() == expected
    assert setup.retractions() == []


@pytest.mark.parametrize("lag", [1, 3])
async def test_two_nodes_answering_alternately_lose_nothing(lag: int) -> None:
    deposits = {n: [Transfer(W1, n, token=USDC, nonce=n)] for n in range(2, 12, 3)}
    chain = chain_with(deposits, head=12)
    setup = Setup(chain, batch_size=3)
    behind = setup.node(Node(chain, lag=lag))
    setup.provider.route = lambda url, post, calls: behind if post % 2 else 0
    await setup.catch_up()
    assert setup.deposits() == [(W1, n, n) for n in range(2, 12, 3)]
