"""trigger-processing's window reads through a provider whose log queries land on a
node behind the window's end: no deposit is missed, no scan is called complete."""

from __future__ import annotations

import pytest
from tests.unit.indexer.indexer_fakes import USDC, FakeChain, Transfer, address
from tests.unit.indexer.rpc_fakes import FakeProvider, Node, client
from tests.unit.indexer.test_poll_loop import config

from intentd.adapters.chain import EvmChainReader
from intentd.adapters.intent_window_rpc import IntentWindowReader
from intentd.adapters.json_rpc import MissingResult
from intentd.api.trigger_scan import ChainReads, token_range
from intentd.indexer.planning import BlockRange

INTENT = address(7)
CONFIG = config(name="TRIG_LAG")


def lagging_reads(chain: FakeChain, *, lag: int, posts: int) -> tuple[ChainReads, FakeProvider]:
    """trigger-processing's reads through a provider whose log queries land on a node
    ``lag`` blocks behind for the first ``posts`` POSTs."""
    provider = FakeProvider(chain)
    provider.nodes.append(Node(chain, lag=lag))
    provider.route = lambda url, post, calls: (
        1 if post < posts and any(c["method"] == "eth_getLogs" for c in calls) else 0
    )
    rpc = client(provider, CONFIG.name)
    return (
        ChainReads(
            rpc,
            EvmChainReader(rpc, [USDC], max_log_range=100),
            IntentWindowReader(rpc, [USDC], max_log_range=100),
        ),
        provider,
    )


async def test_a_token_window_read_on_a_lagging_node_is_not_read_as_no_payment() -> None:
    chain = FakeChain()
    for n in range(1, 61):
        chain.mine(*([Transfer(INTENT, 5_000_000, token=USDC)] if n == 55 else []))
    reads, _ = lagging_reads(chain, lag=10, posts=3)
    found, scanned = await token_range(reads, CONFIG, INTENT, BlockRange(1, 60))
    assert [(d.block_number, d.amount) for d in found] == [(55, 5_000_000)]
    assert scanned == chain.blocks[60]["hash"]


async def test_a_token_window_read_on_a_node_that_stays_behind_gives_no_answer() -> None:
    chain = FakeChain()
    for n in range(1, 61):
        chain.mine(*([Transfer(INTENT, 5_000_000, token=USDC)] if n == 55 else []))
    reads, _ = lagging_reads(chain, lag=10, posts=10**6)
    with pytest.raises(MissingResult):  # no answer (a 503), never "scanned, nothing found"
        await token_range(reads, CONFIG, INTENT, BlockRange(1, 60))
