"""Admission by the relayer's float (``intents.admission``): the view, its age, holds of
concurrent creates, and the writer that writes only what is admitted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from tests.log_capture import own_logs
from tests.unit.intents.intent_store_fakes import NOW, FakeIntentStore, Keys, new_intent

from intentd.domain.liquidity import Float
from intentd.intents import quotes, routing
from intentd.intents.admission import (
    HOLD_MARGIN,
    AdmittingWriter,
    FloatReading,
    InsufficientLiquidity,
    LiquidityGate,
    LiquidityUnknown,
)
from intentd.intents.writer import IntentWriter
from intentd.pricing import StaticPrices
from intentd.settings import Settings

DESTINATION = "ARBITRUM_TESTNET"
TOKEN_OUT = "0x" + "2" * 40  # the fake intents' tokenOut (intent_store_fakes.new_intent)
USDC_BASE = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
RELAYER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
WRITTEN = NOW.timestamp()


def settings(**liquidity: Any) -> Settings:
    def chain(chain_id: int, token: str) -> dict[str, Any]:
        return {
            "chain_id": chain_id, "network": "test", "rpc_urls": ["http://x"], "relayer": RELAYER,
            "tokens": [{"address": token, "symbol": "USDC", "name": "USDC", "decimals": 6,
                        "category": "stablecoin"}],
        }  # fmt: skip

    return Settings.model_validate(
        {
            "database": {"url": "postgresql://x/y"},
            "kafka": {"bootstrap_servers": "k:1"},
            "chains": {
                "BASE_TESTNET": chain(84532, USDC_BASE),
                DESTINATION: chain(421614, TOKEN_OUT),
            },
            "liquidity": {"overcommit_bps": 10_000, **liquidity},
        }
    )  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def reading(
    balance: int, *, pending: int = 0, age: float = 1.0, as_of: float = 0.0
) -> FloatReading:
    return FloatReading(DESTINATION, TOKEN_OUT, Float(balance, pending=pending), age, as_of)


def gate_with(balance: int, **liquidity: Any) -> tuple[LiquidityGate, Clock]:
    clock = Clock()
    gate = LiquidityGate(settings(**liquidity), clock=clock)
    gate.load([reading(balance)])
    return gate, clock


def refusals(reason: str) -> float:
    labels = {"chain": DESTINATION, "reason": reason}
    return REGISTRY.get_sample_value("intentd_liquidity_refusals_total", labels) or 0.0


def test_a_float_never_read_decides_nothing() -> None:
    gate = LiquidityGate(settings())
    before = refusals("unknown")
    with pytest.raises(LiquidityUnknown) as refused:
        gate.check(DESTINATION, TOKEN_OUT, 1)
    assert (refused.value.status, refused.value.retry_after) == (503, 5)
    assert (refused.value.code, refused.value.field) == ("liquidity_unknown", "destination_chain")
    assert "never read" in str(refused.value)
    assert refusals("unknown") == before + 1


def test_a_float_older_than_max_age_decides_nothing() -> None:
    gate, clock = gate_with(10**9, max_age=60.0)
    gate.load([reading(10**9, age=50.0)])
    gate.check(DESTINATION, TOKEN_OUT, 1)
    clock.now += 10.5  # 60.5 s since the executor's reading, the view not reloaded
    with pytest.raises(LiquidityUnknown, match="read 60 s ago"):
        gate.check(DESTINATION, TOKEN_OUT, 1)
    gate.load([reading(10**9, age=1.0)])  # a fresh reading
    gate.check(DESTINATION, TOKEN_OUT, 1)


def test_an_amount_above_the_cover_is_refused_with_its_figures() -> None:
    gate, _ = gate_with(2_000_000)
    gate.check(DESTINATION, TOKEN_OUT, 2_000_000)
    before = refusals("insufficient")
    with pytest.raises(InsufficientLiquidity) as refused:
        gate.check(DESTINATION, TOKEN_OUT, 2_000_001)
    assert (refused.value.status, refused.value.retry_after) == (409, None)
    assert (refused.value.code, refused.value.field) == ("insufficient_liquidity", "amount")
    assert "cannot cover 2.000001 USDC on ARBITRUM_TESTNET" in str(refused.value)
    assert refusals("insufficient") == before + 1


def test_admission_off_checks_nothing() -> None:
    gate = LiquidityGate(settings(admission=False))
    gate.check(DESTINATION, TOKEN_OUT, 10**30)  # no reading at all
    gate.hold(DESTINATION, TOKEN_OUT, 10**30).release()


@given(
    st.lists(st.integers(min_value=1, max_value=3_000_000), max_size=20),
    st.sampled_from([10_000, 15_000, 30_000]),
)
def test_holds_of_one_process_never_admit_past_the_factor(asks: list[int], factor: int) -> None:
    """Creates in flight together (none written yet, the view not reloaded)."""
    gate, _ = gate_with(5_000_000, overcommit_bps=factor)
    admitted = []
    for ask in asks:
        try:
            gate.hold(DESTINATION, TOKEN_OUT, ask)
        except InsufficientLiquidity:
            continue
        admitted.append(ask)
        assert ask <= 5_000_000
    assert sum(admitted) * 10_000 <= 5_000_000 * factor


async def test_a_written_create_stays_held_until_a_reading_counts_it() -> None:
    gate, _ = gate_with(5_000_000)
    hold = gate.hold(DESTINATION, TOKEN_OUT, 4_000_000)
    row = await IntentWriter(FakeIntentStore(), Keys()).insert(new_intent())
    assert row is not None and row.created_at == NOW
    hold.written(row)
    with pytest.raises(InsufficientLiquidity):
        gate.check(DESTINATION, TOKEN_OUT, 2_000_000)
    # a reading taken too soon after the insert (it may not show the row yet): still held
    gate.load([reading(5_000_000, as_of=WRITTEN + HOLD_MARGIN - 0.1)])
    with pytest.raises(InsufficientLiquidity):
        gate.check(DESTINATION, TOKEN_OUT, 2_000_000)
    # a later one counts it in pending: the hold is dropped, not counted twice
    gate.load([reading(5_000_000, pending=4_000_000, as_of=WRITTEN + HOLD_MARGIN)])
    gate.check(DESTINATION, TOKEN_OUT, 1_000_000)
    with pytest.raises(InsufficientLiquidity):
        gate.check(DESTINATION, TOKEN_OUT, 1_000_001)


def test_a_released_hold_frees_its_amount_at_once() -> None:
    gate, _ = gate_with(5_000_000)
    hold = gate.hold(DESTINATION, TOKEN_OUT, 4_000_000)
    with pytest.raises(InsufficientLiquidity):
        gate.check(DESTINATION, TOKEN_OUT, 2_000_000)
    hold.release()
    gate.check(DESTINATION, TOKEN_OUT, 5_000_000)


async def test_the_writer_writes_only_what_the_float_admits() -> None:
    gate, _ = gate_with(12_000_000)
    store = FakeIntentStore(delay=0.01)
    writer = AdmittingWriter(store, Keys(), gate=gate)
    # three creates arrive together, 5 each: two fit in 12, the third is refused unwritten
    results = await asyncio.gather(
        *(writer.insert(new_intent()) for _ in range(3)), return_exceptions=True
    )
    assert [type(r).__name__ for r in results].count("IntentRow") == 2
    assert [type(r) for r in results].count(InsufficientLiquidity) == 1
    assert len(store.rows) == 2 and sum(len(s) for s in store.statements) == 2


async def test_a_failed_write_gives_its_hold_back() -> None:
    gate, _ = gate_with(5_000_000)
    store = FakeIntentStore(lose_connection_after=0)
    writer = AdmittingWriter(store, Keys(), gate=gate)
    with pytest.raises(Exception, match="connection lost"):
        await writer.insert(new_intent())
    store.lose_connection_after = None
    assert await AdmittingWriter(store, Keys(), gate=gate).insert(new_intent()) is not None


async def test_a_create_cancelled_while_its_write_goes_on_stays_held() -> None:
    """A client that goes away does not stop the write (it is shielded): the amount may
    be written, so it stays held until a reading taken after it counts it."""
    gate, clock = gate_with(5_000_000)
    store = FakeIntentStore(gate=asyncio.Event())
    writer = AdmittingWriter(store, Keys(), gate=gate)
    create = asyncio.create_task(writer.insert(new_intent()))
    async with asyncio.timeout(10):  # until the write goes on (not 0.01 s: it may be over)
        while not store.statements:  # noqa: ASYNC110 (state of a fake)
            await asyncio.sleep(0.001)
    clock.now += 2  # the view estimates the database's clock now at as_of + age + 2
    create.cancel()
    with pytest.raises(asyncio.CancelledError):
        await create
    assert store.gate is not None
    store.gate.set()  # the write goes on after the client went away
    with pytest.raises(InsufficientLiquidity):  # 5 held of 5
        gate.check(DESTINATION, TOKEN_OUT, 1)
    gate.load([reading(5_000_000, as_of=1.0 + 2 + HOLD_MARGIN - 0.1)])
    with pytest.raises(InsufficientLiquidity):
        gate.check(DESTINATION, TOKEN_OUT, 1)
    gate.load([reading(5_000_000, pending=5_000_000, as_of=1.0 + 2 + HOLD_MARGIN)])
    with pytest.raises(InsufficientLiquidity):  # now counted once, in pending
        gate.check(DESTINATION, TOKEN_OUT, 1)
    gate.load([reading(10_000_000, pending=5_000_000, as_of=10.0 + HOLD_MARGIN)])
    gate.check(DESTINATION, TOKEN_OUT, 5_000_000)


async def test_a_retried_create_gets_its_intent_whatever_the_float_says_now() -> None:
    """The writer is asked for new intents only: an Idempotency-Key already used answers
    the intent it made (``intents.service.create_intent`` looks it up first); a key used
    by a concurrent create gives its hold back."""
    gate, _ = gate_with(5_000_000)
    store = FakeIntentStore()
    writer = AdmittingWriter(store, Keys(), gate=gate)
    first = new_intent(key="k")
    assert await writer.insert(first) is not None
    gate.load([reading(10_000_000, pending=5_000_000, as_of=WRITTEN + HOLD_MARGIN)])
    assert await writer.insert(first) is None  # the key was used: nothing new written
    gate.check(DESTINATION, TOKEN_OUT, 5_000_000)  # its hold was given back


def test_quote_lists_leave_out_what_the_relayer_cannot_cover() -> None:
    config = settings()
    path = routing.route(config, "BASE_TESTNET", USDC_BASE, DESTINATION, TOKEN_OUT)
    small = quotes.quote(config, StaticPrices({}), path, "2", None)
    large = quotes.quote(config, StaticPrices({}), path, "20", None)
    gate = LiquidityGate(config)
    gate.load([reading(5_000_000)])
    assert gate.covering([small, large]) == [small]
    gate.require(small)
    with pytest.raises(InsufficientLiquidity):
        gate.require(large)
    with pytest.raises(LiquidityUnknown):
        LiquidityGate(config).covering([small])


class ScriptedFloats:
    """A FloatSource that answers None (the database away) for its first ``away``
    loads, then a reading; stops the gate once it answered ``loads`` times."""

    def __init__(self, away: int, loads: int, stop: asyncio.Event) -> None:
        self.away, self.loads, self.stop, self.asked = away, loads, stop, 0

    async def relayer_floats(self) -> list[FloatReading] | None:
        self.asked += 1
        if self.asked >= self.loads:
            self.stop.set()
        return None if self.asked <= self.away else [reading(5_000_000)]


async def test_a_view_that_cannot_be_loaded_is_one_line_then_one_when_loaded_again() -> None:
    """The API's liquidity view loads every ``view_refresh`` (1 s): the database away for
    a minute is not a warning a second."""
    gate = LiquidityGate(settings(view_refresh=0.001), clock=Clock())
    stop = asyncio.Event()
    source = ScriptedFloats(away=60, loads=62, stop=stop)
    with own_logs() as logs:
        async with asyncio.timeout(10):
            await gate.follow(source, stop)
    told = [(e["event"], e["log_level"]) for e in logs if "float" in e["event"]]
    assert told == [
        ("the relayer's float could not be loaded; the view ages", "warning"),
        ("the relayer's float is loaded again", "info"),
    ]
