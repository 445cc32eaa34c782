"""Whether a feed's answer may be used: pure judgements of what a chain said.

A :class:`ChainReading` is what one read of a chain gave: the block it was made at
(number and timestamp), when we made it, and for every feed on that chain its
``latestRoundData`` and ``decimals`` (or why they could not be decoded), plus the
chain's sequencer uptime feed. Judging never does I/O and never reads a clock: the
caller gives ``now`` (unix seconds, our clock).

:func:`judge_view` refuses a read made too long ago (our reads stopped: the RPC is
down) or at a block too old (the node fell behind). :func:`judge_round` refuses an
incomplete round (``updatedAt`` 0, ``answeredInRound < roundId``), an answer <= 0, a
round updated more than the feed's ``heartbeat`` ago or more than
:data:`FUTURE_TOLERANCE` ahead of our clock, and an answer outside the feed's
``[min, max]``; else it gives the answer in USD (``answer / 10**decimals``, exact).
:func:`judge_sequencer` refuses while the L2 sequencer is down, for ``grace``
seconds after it came back, and on a round it cannot interpret. Each refusal is a
:class:`Refusal` whose ``reason`` says what was seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

__all__ = [
    "FUTURE_TOLERANCE",
    "ChainReading",
    "ChainView",
    "FeedReading",
    "FeedRule",
    "Limits",
    "Refusal",
    "Round",
    "judge_round",
    "judge_sequencer",
    "judge_view",
]

FUTURE_TOLERANCE = 60
"""Seconds a round's ``updatedAt`` may be ahead of our clock (clock skew); more is refused."""
SEQUENCER_UP, SEQUENCER_DOWN = 0, 1


@dataclass(frozen=True, slots=True)
class Round:
    """``latestRoundData()`` of an ``AggregatorV3Interface``; times are unix seconds."""

    round_id: int
    answer: int
    started_at: int
    updated_at: int
    answered_in_round: int


@dataclass(frozen=True, slots=True)
class ChainView:
    """Where and when a chain was read."""

    block: int
    block_time: int
    """The block's timestamp (the chain's clock), unix seconds."""
    read_at: float
    """When we read it (our clock), unix seconds."""


@dataclass(frozen=True, slots=True)
class FeedReading:
    """One feed at one block: its round and decimals, or why there are none."""

    round: Round | None
    decimals: int | None
    problem: str | None = None
    """Why ``round`` is None (no contract at the address, an undecodable answer)."""


@dataclass(frozen=True, slots=True)
class ChainReading:
    """Every feed of one chain (by lower-case address) and its sequencer feed, at one block."""

    view: ChainView
    feeds: Mapping[str, FeedReading]
    sequencer: FeedReading | None = None


@dataclass(frozen=True, slots=True)
class FeedRule:
    """What a feed's answers must satisfy (from its ``price_feed`` config)."""

    heartbeat: int
    min: Decimal
    max: Decimal


@dataclass(frozen=True, slots=True)
class Limits:
    """How old our view of a chain may be (``[pricing]``)."""

    max_read_age: float
    max_block_age: float


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str


def judge_view(view: ChainView, now: float, limits: Limits) -> Refusal | None:
    """Refuse a read we made too long ago, or one made at a block too old."""
    read_age = now - view.read_at
    if read_age > limits.max_read_age:
        return Refusal(
            f"last read {read_age:.0f} s ago (pricing.max_read_age {limits.max_read_age:g} s):"
            " the chain's RPC is not answering"
        )
    block_age = now - view.block_time
    if block_age > limits.max_block_age:
        return Refusal(
            f"read at block {view.block}, whose timestamp is {block_age:.0f} s old"
            f" (pricing.max_block_age {limits.max_block_age:g} s): the node is behind"
        )
    return None


def judge_round(reading: FeedReading | None, rule: FeedRule, now: float) -> Decimal | Refusal:
    """The feed's answer in USD, or why it may not be used."""
    if reading is None:
        return Refusal("not read yet")
    found = reading.round
    if found is None or reading.decimals is None:
        return Refusal(reading.problem or "no answer")
    if found.updated_at == 0 or found.answered_in_round < found.round_id:
        return Refusal(
            f"round {found.round_id} is incomplete (updatedAt {found.updated_at},"
            f" answeredInRound {found.answered_in_round})"
        )
    if found.answer <= 0:
        return Refusal(f"round {found.round_id} answered {found.answer}, not a price")
    age = now - found.updated_at
    if age < -FUTURE_TOLERANCE:
        return Refusal(
            f"round {found.round_id} was updated {-age:.0f} s in our future: a clock is wrong"
        )
    if age > rule.heartbeat:
        return Refusal(
            f"stale: round {found.round_id} was updated {age:.0f} s ago, longer than its"
            f" heartbeat of {rule.heartbeat} s"
        )
    usd = Decimal(f"{found.answer}E-{reading.decimals}")  # exact (scaleb would round to 28 digits)
    if not rule.min <= usd <= rule.max:
        return Refusal(
            f"round {found.round_id} answered {usd} USD, outside the feed's bounds"
            f" [{rule.min}, {rule.max}]"
        )
    return usd


def judge_sequencer(reading: FeedReading | None, grace: int, now: float) -> Refusal | None:
    """Refuse prices of a chain whose sequencer is down or came back less than ``grace``
    seconds ago. The feed's ``updatedAt`` is not judged: it changes only with the status."""
    if reading is None:
        return Refusal("sequencer uptime feed not read yet")
    found = reading.round
    if found is None:
        return Refusal(f"sequencer uptime feed: {reading.problem or 'no answer'}")
    if found.answer == SEQUENCER_DOWN:
        return Refusal(f"the sequencer is down (since {found.started_at})")
    if found.answer != SEQUENCER_UP:
        return Refusal(f"the sequencer uptime feed answered {found.answer}, neither 0 nor 1")
    if found.started_at == 0:
        return Refusal("the sequencer uptime feed's round is invalid (startedAt 0)")
    up_for = now - found.started_at
    if up_for < grace:
        return Refusal(
            f"the sequencer came back up {max(up_for, 0):.0f} s ago, within its grace of"
            f" {grace} s (chains.<NAME>.sequencer_grace)"
        )
    return None
