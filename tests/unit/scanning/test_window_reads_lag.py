"""trigger-processing's window reads through a provider whose log queries land on a
node behind the window's end: no deposit is missed, no scan is called complete."""

from __future__ import annotations

import pytest
from tests.unit.adapters.evm.rpc_fakes import FakeProvider, Node, client
from tests.unit.chain.chain_fakes import USDC, FakeChain, Transfer, address
from tests.unit.indexer.test_poll_loop import config

from intentd.adapters.evm.chain_reader import EvmChainReader
from intentd.adapters.evm.json_rpc import MissingResult
from intentd.adapters.evm.scan_chains import EvmScanChain
from intentd.adapters.evm.window_logs import IntentWindowReader
from intentd.chain.blocks import BlockRange
from intentd.scanning.window import token_range

INTENT = address(7)
CONFIG = config(name="TRIG_LAG")


def lagging_reads(chain: FakeChain, *, lag: int, posts: int) -> tuple[EvmScanChain, FakeProvider]:
    """trigger-processing's reads through a provider whose log queries land on a node
    ``lag`` blocks behind for the first ``posts`` POSTs."""
    provider = FakeProvider(chain)
    provider.nodes.append(Node(chain, lag=lag))
    provider.route = lambda url, post, calls: (
        1 if post < posts and any(c["method"] == "eth_getLogs" for c in calls) else 0
    )
    rpc = client(provider, CONFIG.name)
    return (
        EvmScanChain(
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
