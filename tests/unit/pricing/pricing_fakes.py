"""Fakes of the pricing ports: a settable clock, scripted feed readers, and builders of
settings and readings (an ETH feed on two main chains with sequencer feeds, stablecoin
feeds, a test network priced by the static table)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from intentd.pricing.refresh import FeedUnreadable
from intentd.pricing.rounds import ChainReading, ChainView, FeedReading, Round
from intentd.settings import Settings

NOW = 1_800_000_000.0
RELAYER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
ETH_BASE = "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70"
ETH_ARB = "0x639Fe6ab55C921f74e7fac1ee960C0B6293ba612"
USDC_FEED = "0x7e860098F58bBFC8648a4311b374B1D669a2bc6B"
USDT_FEED = "0x3f3f5dF88dC9F13eac63DF89EC16ef6e7E25DdE7"
SEQ_BASE = "0xBCF85224fc0756B9Fa45aA7892530B47e10b6433"
SEQ_ARB = "0xFdB631F5EE196F0ed6FAa767959853A9F217697D"
USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
USDT_BASE = "0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2"
USDC_ARB = "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"
USDC_TEST = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def feed(address: str, **changes: Any) -> dict[str, Any]:
    return {"address": address, "heartbeat": 1320, "min": "100", "max": "100000", **changes}


def stable_feed(address: str, **changes: Any) -> dict[str, Any]:
    return feed(address, heartbeat=95040, min="0.1", max="10", **changes)


def stable(address: str, symbol: str, **changes: Any) -> dict[str, Any]:
    return {
        "address": address,
        "symbol": symbol,
        "name": symbol,
        "decimals": 6,
        "category": "stablecoin",
        **changes,
    }


def settings(**sections: Any) -> Settings:
    """BASE and ARBITRUM (main, ETH fed on each, sequencer feeds, USDC and USDT fed on
    BASE) and BASE_TESTNET (test, ETH from the static table)."""
    chains = {
        "BASE": {
            "chain_id": 8453,
            "network": "main",
            "rpc_urls": ["http://base"],
            "relayer": RELAYER,
            "sequencer_uptime_feed": SEQ_BASE,
            "native": {"price_feed": feed(ETH_BASE)},
            "tokens": [
                stable(USDC_BASE, "USDC", price_feed=stable_feed(USDC_FEED)),
                stable(USDT_BASE, "USDT", price_feed=stable_feed(USDT_FEED)),
            ],
        },
        "ARBITRUM": {
            "chain_id": 42161,
            "network": "main",
            "rpc_urls": ["http://arbitrum"],
            "relayer": RELAYER,
            "sequencer_uptime_feed": SEQ_ARB,
            "native": {"price_feed": feed(ETH_ARB, heartbeat=95040)},
            "tokens": [stable(USDC_ARB, "USDC")],
        },
        "BASE_TESTNET": {
            "chain_id": 84532,
            "network": "test",
            "rpc_urls": ["http://base-sepolia"],
            "relayer": RELAYER,
            "tokens": [stable(USDC_TEST, "USDC")],
        },
    }
    data: dict[str, Any] = {
        "database": {"url": "postgresql://x/y"},
        "kafka": {"bootstrap_servers": "k:1"},
        "chains": chains,
        "prices": {"ETH": "3000"},
        **sections,
    }
    return Settings.model_validate(data)


def round_(
    answer: int,
    *,
    updated: float = NOW - 10,
    round_id: int = 7,
    answered_in: int | None = None,
    started: float | None = None,
) -> Round:
    return Round(
        round_id,
        answer,
        int(updated if started is None else started),
        int(updated),
        round_id if answered_in is None else answered_in,
    )


def usd(value: str, decimals: int = 8) -> int:
    """A feed's integer answer for ``value`` USD."""
    return int(Decimal(value).scaleb(decimals))


def reading(
    feeds: dict[str, Round | FeedReading],
    *,
    sequencer: Round | None = None,
    block_time: float = NOW - 1,
    read_at: float = NOW,
    block: int = 100,
) -> ChainReading:
    built = {
        address.lower(): found if isinstance(found, FeedReading) else FeedReading(found, 8)
        for address, found in feeds.items()
    }
    seq = FeedReading(sequencer, None) if sequencer is not None else None
    return ChainReading(ChainView(block, int(block_time), read_at), built, seq)


UP_LONG_AGO = Round(1, 0, int(NOW - 86_400), int(NOW - 86_400), 1)
"""A sequencer uptime round: up for a day."""


def healthy(eth: str = "3000", usdc: str = "1", usdt: str = "1") -> dict[str, ChainReading]:
    """Readings of both main chains where everything is fine."""
    return {
        "BASE": reading(
            {
                ETH_BASE: round_(usd(eth)),
                USDC_FEED: round_(usd(usdc)),
                USDT_FEED: round_(usd(usdt)),
            },
            sequencer=UP_LONG_AGO,
        ),
        "ARBITRUM": reading({ETH_ARB: round_(usd(eth))}, sequencer=UP_LONG_AGO),
    }


class ScriptedReader:
    """A FeedReader answering from a script: a ChainReading, or an exception to raise.
    After the script it repeats its last step; ``reads`` counts the calls."""

    def __init__(self, chain: str, script: list[ChainReading | Exception]) -> None:
        self.chain = chain
        self.script = list(script)
        self.reads = 0
        self.closed = False
        self.on_read: Callable[[int], None] | None = None

    async def read(self) -> ChainReading:
        step = self.script[min(self.reads, len(self.script) - 1)]
        self.reads += 1
        if self.on_read is not None:
            self.on_read(self.reads)
        if isinstance(step, Exception):
            raise step
        return step

    async def close(self) -> None:
        self.closed = True


def outage() -> FeedUnreadable:
    return FeedUnreadable("RpcTransportError: connection refused")
