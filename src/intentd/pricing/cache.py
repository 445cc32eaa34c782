"""The price source quoting reads: the last reading of every chain, judged at each read.

:class:`FeedPrices` holds what the refresher (:mod:`~intentd.pricing.refresh`) last
read of each chain and answers :meth:`FeedPrices.usd_price` from it without I/O: a
symbol with feeds on its network class is priced by them, all of them, judged now
(:mod:`~intentd.pricing.rounds`: our view of the chain fresh, its sequencer up and
past its grace, every round complete, fresh and within bounds) and agreeing
(:func:`~intentd.pricing.consensus.agree`); the lowest answer is the price. Any
failure refuses the symbol (:class:`~intentd.pricing.sources.PriceUnavailable`, its
detail naming the feed and why): never an old or a partial answer. A symbol without
feeds falls back to the static table, test networks only.

Because judging uses the clock, a price goes stale on its own when reads stop; a
new reading replaces a chain's whole previous one. An accepted price is remembered
until the first moment a clock-bound check could refuse it (our read, the block, a
round growing too old) or a new reading arrives: every check that depends on the
clock only refuses later (staleness) or only accepts later (the sequencer's grace, a
round from our future), so within that window judging again would accept it again.
Refusals are judged again at every read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from intentd.pricing.catalogue import Catalogue, FeedSpec
from intentd.pricing.consensus import agree, check_peg
from intentd.pricing.rounds import (
    ChainReading,
    FeedReading,
    Limits,
    Refusal,
    judge_round,
    judge_sequencer,
    judge_view,
)
from intentd.pricing.sources import Price, PriceRefused, PriceUnavailable, StaticPrices
from intentd.settings import Settings

__all__ = ["FeedPrices", "SymbolStatus"]


@dataclass(frozen=True, slots=True)
class SymbolStatus:
    """What quoting would get for one fed symbol now (for metrics and alerts)."""

    network: str
    symbol: str
    price: Price | None
    refused: PriceRefused | None
    depegged: bool


class FeedPrices:
    """A :class:`~intentd.pricing.sources.PriceSource` over the last reading of each chain."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.time) -> None:
        self.catalogue = Catalogue.of(settings)
        self._static = StaticPrices(settings.prices)
        self._limits = Limits(settings.pricing.max_read_age, settings.pricing.max_block_age)
        self._max_deviation_bps = settings.pricing.max_deviation_bps
        self._peg_tolerance_bps = settings.pricing.peg_tolerance_bps
        self._clock = clock
        self._readings: dict[str, ChainReading] = {}
        self._accepted: dict[tuple[str, str], tuple[float, float, Price]] = {}
        """(network, symbol) -> (judged at, accepted through, price)."""

    def record(self, chain: str, reading: ChainReading) -> None:
        """``reading`` is now what is known of ``chain`` (the previous one is dropped)."""
        self._readings[chain] = reading
        self._accepted.clear()

    def reading(self, chain: str) -> ChainReading | None:
        return self._readings.get(chain)

    def usd_price(self, symbol: str, network: str) -> Price | None:
        specs = self.catalogue.by_symbol.get((network, symbol))
        if not specs:
            return self._static.usd_price(symbol, network)
        now = self._clock()
        accepted = self._accepted.get((network, symbol))
        if accepted is not None and accepted[0] <= now <= accepted[1]:
            return accepted[2]
        price, through = self._price(symbol, specs, now)
        self._accepted[network, symbol] = (now, through, price)
        return price

    def _price(self, symbol: str, specs: tuple[FeedSpec, ...], now: float) -> tuple[Price, float]:
        """The price of ``symbol`` judged at ``now``, and until when judging again would
        accept it; raises :class:`PriceUnavailable`."""
        answers: list[tuple[FeedSpec, FeedReading, Decimal]] = []
        for spec in specs:
            verdict = self._judge(spec, now)
            if isinstance(verdict, Refusal):
                raise PriceUnavailable(
                    symbol, f"no trusted USD price for {symbol}: {spec.id}: {verdict.reason}"
                )
            answers.append(verdict)
        disagreement = agree([(s.id, usd) for s, _, usd in answers], self._max_deviation_bps)
        if disagreement is not None:
            raise PriceUnavailable(
                symbol, f"no trusted USD price for {symbol}: {disagreement.reason}"
            )
        spec, reading, usd = min(answers, key=lambda answer: answer[2])
        assert reading.round is not None  # judged
        good_until = min(r.round.updated_at + s.rule.heartbeat for s, r, _ in answers if r.round)
        views = [self._readings[s.chain].view for s, _, _ in answers]
        through = min(
            good_until,
            *(v.read_at + self._limits.max_read_age for v in views),
            *(v.block_time + self._limits.max_block_age for v in views),
        )
        price = Price(
            usd,
            "chainlink",
            spec.id,
            reading.round.round_id,
            datetime.fromtimestamp(reading.round.updated_at, UTC),
            datetime.fromtimestamp(good_until, UTC),
        )
        return price, through

    def statuses(self) -> list[SymbolStatus]:
        """Every fed symbol as quoting would see it now."""
        found = []
        for network, symbol in sorted(self.catalogue.by_symbol):
            try:
                price = self.usd_price(symbol, network)
            except PriceRefused as exc:
                found.append(SymbolStatus(network, symbol, None, exc, depegged=False))
                continue
            depegged = False
            if price is not None and (network, symbol) in self.catalogue.stablecoins:
                try:
                    check_peg(symbol, price, self._peg_tolerance_bps)
                except PriceRefused:
                    depegged = True
            found.append(SymbolStatus(network, symbol, price, None, depegged))
        return found

    def _judge(self, spec: FeedSpec, now: float) -> tuple[FeedSpec, FeedReading, Decimal] | Refusal:
        reading = self._readings.get(spec.chain)
        if reading is None:
            return Refusal(f"{spec.chain} not read yet")
        stale_view = judge_view(reading.view, now, self._limits)
        if stale_view is not None:
            return stale_view
        chain = self.catalogue.chains[spec.chain]
        if chain.sequencer is not None:
            down = judge_sequencer(reading.sequencer, chain.sequencer_grace, now)
            if down is not None:
                return down
        feed = reading.feeds.get(spec.key)
        verdict = judge_round(feed, spec.rule, now)
        if isinstance(verdict, Refusal):
            return verdict
        assert feed is not None
        return spec, feed, verdict
