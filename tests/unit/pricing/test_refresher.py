"""The refresher on scripted readers: it records readings, rides out an outage (the last
reading ages into refusal, never a wrong price), logs an outage once when it starts and
once when it ends, and reports each symbol's state in the metrics."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY
from tests.log_capture import own_logs
from tests.unit.pricing.pricing_fakes import (
    ETH_BASE,
    NOW,
    Clock,
    ScriptedReader,
    healthy,
    outage,
    settings,
)

from intentd.pricing import PriceUnavailable
from intentd.pricing.cache import FeedPrices
from intentd.pricing.refresh import PriceRefresher
from intentd.pricing.rounds import ChainReading


def gauge(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


async def run_until(refresher: PriceRefresher, readers: list[ScriptedReader], reads: int) -> None:
    """Run the refresher until every reader was read ``reads`` times (bounded)."""
    stop = asyncio.Event()

    def maybe_stop(_: int) -> None:
        if all(r.reads >= reads for r in readers):
            stop.set()

    for reader in readers:
        reader.on_read = maybe_stop
    async with asyncio.timeout(10):
        await refresher.run(stop)


def readers_of(script: dict[str, list[ChainReading | Exception]]) -> list[ScriptedReader]:
    return [ScriptedReader(chain, steps) for chain, steps in script.items()]


async def test_an_outage_is_logged_once_and_its_prices_are_refused_once_stale() -> None:
    clock = Clock()
    prices = FeedPrices(settings(), clock=clock)
    good = healthy()
    base = ScriptedReader("BASE", [good["BASE"], outage(), outage(), outage(), good["BASE"]])
    arbitrum = ScriptedReader("ARBITRUM", [good["ARBITRUM"]])
    seen: list[tuple[int, str]] = []

    def during(reads: int) -> None:
        if reads == 4:  # third failed read: our last good one is now 31 s old
            clock.now = NOW + 31
            with pytest.raises(PriceUnavailable, match="last read 31 s ago") as raised:
                prices.usd_price("ETH", "main")
            seen.append((reads, raised.value.detail))

    refresher = PriceRefresher(prices, [base, arbitrum], interval=0.001, clock=clock)
    with own_logs() as logs:
        stop = asyncio.Event()

        def on_base(reads: int) -> None:
            during(reads)
            if reads >= 6:
                stop.set()

        base.on_read = on_base
        async with asyncio.timeout(10):
            await refresher.run(stop)
    assert seen  # refused while the chain was unreadable and the reading too old
    events = [(entry["event"], entry.get("chain")) for entry in logs]
    assert (
        events.count(
            (
                "price feeds unreadable; their prices are refused once older than"
                " pricing.max_read_age",
                "BASE",
            )
        )
        == 1
    )
    assert events.count(("price feeds readable again", "BASE")) == 1
    again = next(e for e in logs if e["event"] == "price feeds readable again")
    assert again["failed_attempts"] == 3
    clock.now = NOW  # the recovered reading is the healthy one again
    found = prices.usd_price("ETH", "main")
    assert found is not None
    assert found.usd == 3000


async def test_symbol_states_reach_the_metrics_and_the_log_once_per_change() -> None:
    clock = Clock()
    prices = FeedPrices(settings(), clock=clock)
    good, depegged = healthy(), healthy(usdt="0.95")
    base = ScriptedReader("BASE", [good["BASE"], depegged["BASE"], depegged["BASE"]])
    arbitrum = ScriptedReader("ARBITRUM", [good["ARBITRUM"]])
    refresher = PriceRefresher(prices, [base, arbitrum], interval=0.001, clock=clock)
    with own_logs() as logs:
        await run_until(refresher, [base, arbitrum], 3)
    assert gauge("intentd_token_depegged", network="main", symbol="USDT") == 1
    assert gauge("intentd_token_depegged", network="main", symbol="USDC") == 0
    assert gauge("intentd_price_usable", network="main", symbol="ETH") == 1
    assert gauge("intentd_price_usable", network="main", symbol="USDT") == 1
    # one chain read before the other is not "ETH refused: ARBITRUM not read yet"
    assert [e["reason"] for e in logs if e["event"] == "price refused"] == []
    depeg_logs = [e for e in logs if e["event"] == "stablecoin off its peg; refused"]
    assert [(e["symbol"], e["usd"]) for e in depeg_logs] == [("USDT", "0.95000000")]
    assert gauge("intentd_price_feed_answer_usd", chain="BASE", feed=ETH_BASE.lower()) == 3000


async def test_started_waits_for_one_attempt_per_chain_read_or_failed() -> None:
    prices = FeedPrices(settings(), clock=Clock())
    base = ScriptedReader("BASE", [outage()])
    arbitrum = ScriptedReader("ARBITRUM", [healthy()["ARBITRUM"]])
    refresher = PriceRefresher(prices, [base, arbitrum], interval=0.001)
    stop = asyncio.Event()
    task = asyncio.create_task(refresher.run(stop))
    try:
        assert await refresher.started(5)
    finally:
        stop.set()
        await task
    assert base.reads >= 1
    assert arbitrum.reads >= 1
    with pytest.raises(PriceUnavailable, match="BASE not read yet"):
        prices.usd_price("ETH", "main")


async def test_a_long_outage_is_summarised_every_30_s_not_told_per_attempt() -> None:
    clock = Clock()
    prices = FeedPrices(settings(), clock=clock)
    good = healthy()
    base = ScriptedReader("BASE", [good["BASE"], *[outage() for _ in range(12)], good["BASE"]])
    arbitrum = ScriptedReader("ARBITRUM", [good["ARBITRUM"]])

    stop = asyncio.Event()

    def advance(reads: int) -> None:
        clock.now = NOW + 10 * reads  # an attempt every 10 s: 120 s of outage
        if reads >= 15:
            stop.set()

    base.on_read = advance
    refresher = PriceRefresher(prices, [base, arbitrum], interval=0.001, clock=clock)
    with own_logs() as logs:
        async with asyncio.timeout(10):
            await refresher.run(stop)
    told = [entry for entry in logs if entry.get("chain") == "BASE"]
    events = [entry["event"] for entry in told if entry["event"].startswith("price feeds")]
    assert events == [
        "price feeds unreadable; their prices are refused once older than pricing.max_read_age",
        "price feeds still unreadable",
        "price feeds still unreadable",
        "price feeds still unreadable",
        "price feeds readable again",
    ]
    summary = next(entry for entry in told if entry["event"] == "price feeds still unreadable")
    assert summary["log_level"] == "warning"
    assert (summary["seconds"], summary["failed_attempts"]) == (30.0, 4)
