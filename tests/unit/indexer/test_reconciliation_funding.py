"""Which native-coin intents the reconciliation reads (issue 18, item 3): every batch
costs one ``eth_getBalance`` per covered address, so an intent that ended is read only
for the blocks stamped before it ended (and a margin), never for the rest of the hour
after its expiry; a live intent, or one whose end comes after the blocks (a poller
reading behind), is read as before."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from intentd.chain.blocks import BlockHeader
from intentd.chain.evm.balances import AFTER_EXPIRY, BEFORE_CREATION, Reconciled
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.indexer.open_native import (
    AFTER_END,
    NativeIntent,
    OpenNativeWindows,
    funding_window,
)

T0 = 1_700_000_000
"""The block time of block 0 of the fake chain; a block every second."""


def block_hash(n: int) -> str:
    return f"0x{n:064x}"


def header(n: int) -> BlockHeader:
    return BlockHeader(n, block_hash(n), block_hash(n - 1), T0 + n)


class CountingState:
    """Every balance is 0; counts the balance reads of each JSON-RPC batch."""

    def __init__(self) -> None:
        self.reads: list[int] = []

    async def balances(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        self.reads.append(len(queries))
        return [0] * len(queries)

    async def receipts(self, tx_hashes: Sequence[str]) -> list[Mapping[str, Any]]:
        raise AssertionError("no transaction moves these addresses")


class Source:
    """The poller's source of windows, over :class:`OpenNativeWindows`."""

    def __init__(self, windows: OpenNativeWindows) -> None:
        self.windows = windows

    async def reconciled(self, first_time: int, last_time: int) -> list[Reconciled]:
        return self.windows.reconciled(first_time, last_time)


def address(n: int) -> str:
    return f"0x{n:040x}"


async def test_a_batch_reads_only_the_intents_that_could_be_funded_in_its_blocks() -> None:
    """Blocks 1000..1099 (stamped T0+1000..): 3 live intents; 4 that expired at T0+60
    and ended at T0+100 (the old window, expiry + 1 h, still covers the batch); 2 that
    end at T0+5000, after the batch (the poller reads behind: a payment in these blocks
    came while they were open and must be found)."""
    windows = OpenNativeWindows()
    created, expires = T0 - 600, T0 + 60
    live = [NativeIntent(address(n), created, expires) for n in range(3)]
    ended = [NativeIntent(address(10 + n), created, expires, T0 + 100) for n in range(4)]
    later = [NativeIntent(address(20 + n), created, expires, T0 + 5000) for n in range(2)]
    for intent in (*live, *ended, *later):
        windows.remember(intent)
    state = CountingState()
    reconciliation = Reconciliation("C", state, Source(windows))

    for first in range(1000, 1100, 10):  # ten batches while following the chain
        headers = [header(n) for n in range(first, first + 10)]
        blocks = [{"number": hex(h.number), "transactions": []} for h in headers]
        assert await reconciliation.find(headers, blocks) == []

    # Before and after the first batch, then after each: only live and later ones.
    assert state.reads == [2 * 5] + [5] * 9


async def test_the_margin_after_an_intents_end_is_read_then_no_more() -> None:
    windows = OpenNativeWindows()
    windows.remember(NativeIntent(address(1), T0 - 600, T0 + 600, T0 + 100))
    assert [w.address for w in windows.reconciled(T0 + 90, T0 + 99)] == [address(1)]
    assert [w.address for w in windows.reconciled(T0 + 100 + AFTER_END, T0 + 500)] == [address(1)]
    assert windows.reconciled(T0 + 101 + AFTER_END, T0 + 600) == []


def test_a_later_read_of_an_intent_never_widens_its_window_again() -> None:
    """The watched set may read an intent's row again (an id it was missing); a row read
    before the end was learnt must not undo it. Terminal statuses have no way out."""
    windows = OpenNativeWindows()
    ended = NativeIntent(address(1), T0 - 600, T0 + 600, T0 + 100)
    windows.remember(ended)
    windows.remember(NativeIntent(address(1), T0 - 600, T0 + 600))  # read while live
    assert windows.reconciled(T0 + 101 + AFTER_END, T0 + 600) == []


times = st.integers(min_value=0, max_value=10**7)


@given(
    created=times,
    lifetime=st.integers(min_value=1, max_value=7 * 86_400),
    ended_after=st.none() | st.integers(min_value=0, max_value=8 * 86_400),
    block=st.integers(min_value=-BEFORE_CREATION - 10, max_value=10**7 + 9 * 86_400),
)
def test_a_window_never_drops_a_block_mined_while_the_intent_was_open(
    created: int, lifetime: int, ended_after: int | None, block: int
) -> None:
    """Against the old window (creation - 5 min .. expiry + 1 h, whatever the state):
    never wider; equal for every block stamped up to the end (plus the margin, for
    clocks and reorgs); empty after it."""
    expires = created + lifetime
    ended = None if ended_after is None else created + ended_after
    window = funding_window(NativeIntent(address(1), created, expires, ended))
    old = Reconciled.of_intent(address(1), created, expires)
    assert window.first_time == old.first_time
    assert window.last_time <= old.last_time
    if ended is None or block <= ended + AFTER_END:
        assert window.covers(block) == old.covers(block)
    else:
        assert not window.covers(block)
    assert old.last_time == expires + AFTER_EXPIRY
