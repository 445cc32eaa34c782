"""The mock feeds of the dev stack and the Chainlink reader, on an anvil of this test:
feeds are placed once at their fixed addresses (and kept), the reader decodes what they
answer at one block, and every way a test moves them is what the reader then sees."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import TypeVar

import pytest
from web3 import Web3

from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.adapters.evm.price_feeds import ChainlinkReader
from intentd.pricing.refresh import FeedUnreadable
from intentd.pricing.rounds import ChainReading
from intentd_dev.devinfra import feeds
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil
from intentd_dev.devinfra.contracts import aggregator_artifact, connect

pytestmark = pytest.mark.integration

CHAIN_ID = 777_021
ETH = feeds.feed_address("ETH")
NOBODY = Web3.to_checksum_address("0x" + "ab" * 20)
_T = TypeVar("_T")


@pytest.fixture(scope="module")
async def chain() -> AsyncIterator[AnvilProcess]:
    instance = await asyncio.to_thread(start_anvil, CHAIN_ID)
    try:
        placed = await on_chain(instance, lambda w3: feeds.ensure_feeds(w3, aggregator_artifact()))
        assert placed == ["ETH", "USDC", "USDT", "sequencer"]
        yield instance
    finally:
        await asyncio.to_thread(instance.stop)


async def on_chain(chain: AnvilProcess, step: Callable[[Web3], _T]) -> _T:
    def run() -> _T:
        with connect(chain.url) as w3:
            return step(w3)

    return await asyncio.to_thread(run)


async def read(chain: AnvilProcess, *addresses: str) -> ChainReading:
    client = JsonRpcClient("DEV", [chain.url], chain_id=CHAIN_ID, attempts=1)
    reader = ChainlinkReader(client, list(addresses or (ETH,)), sequencer=feeds.SEQUENCER_FEED)
    try:
        return await reader.read()
    finally:
        await reader.close()


async def test_feeds_are_placed_once_and_read_at_one_block(chain: AnvilProcess) -> None:
    again = await on_chain(chain, lambda w3: feeds.ensure_feeds(w3, aggregator_artifact()))
    assert again == []  # kept as they are
    found = await read(chain, ETH, feeds.feed_address("USDT"))
    head = await on_chain(chain, lambda w3: w3.eth.get_block("latest"))
    assert found.view.block == head["number"]
    assert found.view.block_time == head["timestamp"]
    eth = found.feeds[ETH.lower()]
    assert eth.decimals == 8
    assert eth.round is not None
    assert eth.round.answer == 3000 * 10**8
    assert eth.round.answered_in_round == eth.round.round_id
    assert eth.round.updated_at == head["timestamp"]  # live: the block's time
    assert found.sequencer is not None
    assert found.sequencer.round is not None
    assert (found.sequencer.round.answer, found.sequencer.round.started_at) == (0, 1)


async def test_a_moved_price_is_read_as_a_new_round(chain: AnvilProcess) -> None:
    before = (await read(chain)).feeds[ETH.lower()].round
    await on_chain(chain, lambda w3: feeds.set_price(w3, ETH, Decimal("3101.25")))
    after = (await read(chain)).feeds[ETH.lower()].round
    assert before is not None
    assert after is not None
    assert after.answer == 310_125_000_000
    assert after.round_id == before.round_id + 1


async def test_pinned_rounds_and_the_sequencer_are_read_as_set(chain: AnvilProcess) -> None:
    then = int(time.time()) - 7200

    def pin(w3: Web3) -> None:
        feeds.set_round(
            w3, ETH, round_id=9, answer=-5, started_at=then, updated_at=then, answered_in_round=8
        )
        feeds.set_sequencer(w3, up=False, since=then)

    await on_chain(chain, pin)
    found = await read(chain)
    eth = found.feeds[ETH.lower()].round
    assert eth is not None
    assert (eth.round_id, eth.answer, eth.updated_at, eth.answered_in_round) == (9, -5, then, 8)
    assert found.sequencer is not None
    assert found.sequencer.round is not None
    assert (found.sequencer.round.answer, found.sequencer.round.started_at) == (1, then)

    def restore(w3: Web3) -> None:
        feeds.set_price(w3, ETH, Decimal(3000))
        feeds.set_live(w3, ETH, True)
        feeds.set_sequencer(w3, up=True, since=1)

    await on_chain(chain, restore)


async def test_an_address_without_a_feed_is_recorded_not_fatal(chain: AnvilProcess) -> None:
    found = await read(chain, ETH, NOBODY)
    assert found.feeds[NOBODY.lower()].round is None
    assert "no feed there?" in (found.feeds[NOBODY.lower()].problem or "")
    assert found.feeds[ETH.lower()].round is not None


async def test_an_unreachable_chain_is_unreadable() -> None:
    client = JsonRpcClient("DEV", ["http://127.0.0.1:9"], attempts=1, timeout=2)
    reader = ChainlinkReader(client, [ETH])
    try:
        with pytest.raises(FeedUnreadable):
            await reader.read()
    finally:
        await reader.close()
