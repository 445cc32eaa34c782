"""FeedPrices on fake readings: every way a price is refused (naming the feed and why),
agreement across chains, the lowest of agreeing answers, the static table only for test
networks, and prices that go stale on their own when reads stop."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import settings as settings_
from hypothesis import strategies as st
from tests.unit.pricing.pricing_fakes import (
    ETH_ARB,
    ETH_BASE,
    NOW,
    UP_LONG_AGO,
    USDC_FEED,
    USDT_FEED,
    Clock,
    healthy,
    reading,
    round_,
    settings,
    usd,
)

from intentd.pricing import PriceUnavailable
from intentd.pricing.cache import FeedPrices
from intentd.pricing.rounds import ChainReading, FeedReading, Round


def prices(readings: dict[str, ChainReading] | None = None, **sections: object) -> FeedPrices:
    found = FeedPrices(settings(**sections), clock=Clock())
    for chain, chain_reading in (readings if readings is not None else healthy()).items():
        found.record(chain, chain_reading)
    return found


def refused(source: FeedPrices, symbol: str = "ETH") -> str:
    with pytest.raises(PriceUnavailable) as raised:
        source.usd_price(symbol, "main")
    return raised.value.detail


def test_agreeing_feeds_price_a_symbol_at_the_lowest_answer_with_its_round() -> None:
    readings = healthy()
    readings["ARBITRUM"] = reading(
        {ETH_ARB: round_(usd("3010"), round_id=42, updated=NOW - 5)}, sequencer=UP_LONG_AGO
    )
    found = prices(readings).usd_price("ETH", "main")
    assert found is not None
    assert (found.usd, found.source, found.feed, found.round_id) == (
        Decimal(3000),
        "chainlink",
        f"BASE:{ETH_BASE}",
        7,
    )
    assert found.updated_at == datetime.fromtimestamp(int(NOW - 10), UTC)
    assert found.good_until == datetime.fromtimestamp(int(NOW - 10) + 1320, UTC)


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ({ETH_BASE: round_(usd("3000"), updated=NOW - 1321)}, "was updated 1321 s ago"),
        ({ETH_BASE: round_(usd("3000"), answered_in=6)}, "round 7 is incomplete"),
        ({ETH_BASE: round_(usd("3000"), updated=0)}, "incomplete (updatedAt 0"),
        ({ETH_BASE: round_(0)}, "answered 0, not a price"),
        ({ETH_BASE: round_(usd("99"))}, "outside the feed's bounds"),
        ({ETH_BASE: FeedReading(None, None, "no feed there?")}, "no feed there?"),
        ({}, "not read yet"),
    ],
)
def test_one_bad_feed_refuses_the_symbol_naming_it(
    base: dict[str, Round | FeedReading], expected: str
) -> None:
    readings = healthy()
    readings["BASE"] = reading(base, sequencer=UP_LONG_AGO)
    detail = refused(prices(readings))
    assert f"BASE:{ETH_BASE}" in detail
    assert expected in detail


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (Round(2, 1, int(NOW - 60), int(NOW - 60), 2), "the sequencer is down"),
        (Round(2, 0, int(NOW - 60), int(NOW - 60), 2), "came back up 60 s ago"),
        (None, "sequencer uptime feed not read yet"),
    ],
)
def test_a_sequencer_down_or_in_its_grace_refuses_prices_read_on_its_chain(
    status: Round | None, expected: str
) -> None:
    readings = healthy()
    readings["ARBITRUM"] = reading({ETH_ARB: round_(usd("3000"))}, sequencer=status)
    assert expected in refused(prices(readings))
    assert prices(readings).usd_price("USDC", "main") is not None  # fed on BASE only


def test_feeds_that_disagree_refuse_the_symbol() -> None:
    readings = healthy()
    readings["ARBITRUM"] = reading({ETH_ARB: round_(usd("3100"))}, sequencer=UP_LONG_AGO)
    assert "feeds disagree" in refused(prices(readings))
    wider = prices(readings, pricing={"max_deviation_bps": 400})
    found = wider.usd_price("ETH", "main")
    assert found is not None
    assert found.usd == 3000


def test_prices_go_stale_on_their_own_when_reads_stop() -> None:
    clock = Clock()
    source = FeedPrices(settings(), clock=clock)
    for chain, found in healthy().items():
        source.record(chain, found)
    assert source.usd_price("ETH", "main") is not None
    clock.now = NOW + 30
    assert source.usd_price("ETH", "main") is not None
    clock.now = NOW + 31  # no read for longer than pricing.max_read_age
    with pytest.raises(PriceUnavailable, match="last read 31 s ago"):
        source.usd_price("ETH", "main")


def test_a_node_serving_an_old_block_is_not_believed() -> None:
    readings = healthy()
    readings["BASE"] = reading(
        {ETH_BASE: round_(usd("3000"), updated=NOW - 200)},
        sequencer=UP_LONG_AGO,
        block_time=NOW - 121,
    )
    assert "whose timestamp is 121 s old" in refused(prices(readings))


def test_the_static_table_prices_test_networks_only() -> None:
    source = prices()
    static = source.usd_price("ETH", "test")
    assert static is not None
    assert (static.usd, static.source) == (Decimal(3000), "static")
    assert source.usd_price("BTC", "main") is None  # no feed, no table entry: no price


def test_statuses_say_which_symbols_are_usable_and_which_stablecoins_are_depegged() -> None:
    readings = healthy(usdt="0.95")
    readings["ARBITRUM"] = reading({ETH_ARB: round_(usd("3000"))}, sequencer=None)
    found = {(s.network, s.symbol): s for s in prices(readings).statuses()}
    assert set(found) == {("main", "ETH"), ("main", "USDC"), ("main", "USDT")}
    assert found["main", "ETH"].refused is not None
    assert (found["main", "USDC"].refused, found["main", "USDC"].depegged) == (None, False)
    assert (found["main", "USDT"].refused, found["main", "USDT"].depegged) == (None, True)


def test_one_feed_named_by_two_tokens_is_read_once() -> None:
    shared = settings(
        chains={
            "BASE": {
                "chain_id": 8453,
                "network": "main",
                "rpc_urls": ["http://base"],
                "relayer": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
                "native": {"price_feed": {**_eth_feed()}},
            },
            "ARBITRUM": {
                "chain_id": 42161,
                "network": "main",
                "rpc_urls": ["http://arbitrum"],
                "relayer": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
                "native": {"price_feed": {**_eth_feed(), "chain": "BASE"}},
            },
        }
    )
    catalogue = FeedPrices(shared).catalogue
    assert list(catalogue.chains) == ["BASE"]
    assert catalogue.chains["BASE"].feeds == (ETH_BASE,)
    assert len(catalogue.by_symbol["main", "ETH"]) == 1
    assert {USDC_FEED, USDT_FEED}.isdisjoint(catalogue.chains["BASE"].feeds)


def _eth_feed() -> dict[str, object]:
    return {"address": ETH_BASE, "heartbeat": 1320, "min": "100", "max": "100000"}


@settings_(max_examples=500, deadline=None)
@given(
    updated=st.tuples(st.integers(-70, 1400), st.integers(-70, 1400)),
    read=st.tuples(st.integers(0, 40), st.integers(0, 40)),
    block=st.tuples(st.integers(0, 130), st.integers(0, 130)),
    seq_since=st.tuples(*[st.sampled_from([10, 3590, 3600, 4000])] * 2),
    eth=st.integers(2950, 3050),
    apart=st.integers(-40, 40),
    times=st.lists(st.integers(-100, 1500), min_size=2, max_size=8),
)
def test_a_remembered_price_is_what_judging_again_would_give(
    *,
    updated: tuple[int, int],
    read: tuple[int, int],
    block: tuple[int, int],
    seq_since: tuple[int, int],
    eth: int,
    apart: int,
    times: list[int],
) -> None:
    answers = (eth, eth + apart)  # within 1 % of each other, or just not
    readings = {
        chain: reading(
            {feed: round_(usd(str(answers[i])), updated=NOW - updated[i])},
            sequencer=Round(1, 0, int(NOW - seq_since[i]), int(NOW - seq_since[i]), 1),
            read_at=NOW - read[i],
            block_time=NOW - block[i],
        )
        for i, (chain, feed) in enumerate((("BASE", ETH_BASE), ("ARBITRUM", ETH_ARB)))
    }
    clock = Clock()
    remembering = FeedPrices(settings(), clock=clock)
    for chain, found in readings.items():
        remembering.record(chain, found)
    for offset in times:  # in any order: the clock may step back
        clock.now = NOW + offset
        fresh = FeedPrices(settings(), clock=clock)
        for chain, found in readings.items():
            fresh.record(chain, found)
        assert _outcome(remembering) == _outcome(fresh)


def _outcome(source: FeedPrices) -> object:
    try:
        return source.usd_price("ETH", "main")
    except PriceUnavailable as exc:
        return exc.detail
