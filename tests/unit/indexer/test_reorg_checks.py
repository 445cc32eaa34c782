"""Reorg checks: linkage of a batch, common ancestor, retractions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.chain.blocks import BlockHeader
from intentd.chain.transfers import ChainTransfer
from intentd.indexer.reorg import (
    Cursor,
    DeepReorgError,
    Linkage,
    PublishedDeposit,
    check_linkage,
    common_ancestor,
    retractions,
)


def h(tag: str, number: int) -> str:
    return f"0x{tag}{number:063x}"


def chain(tag: str, first: int, last: int, parent_tag: str | None = None) -> list[BlockHeader]:
    """Headers ``first..last`` of fork ``tag`` (whose first parent is on ``parent_tag``)."""
    headers = []
    for n in range(first, last + 1):
        parent = h(parent_tag or tag, n - 1) if n == first else h(tag, n - 1)
        headers.append(BlockHeader(n, h(tag, n), parent, 1_700_000_000 + n))
    return headers


@pytest.mark.parametrize(
    ("cursor", "headers", "expected"),
    [
        (Cursor(9, h("a", 9)), chain("a", 10, 14), Linkage.LINKED),
        (Cursor(9, None), chain("a", 10, 14, parent_tag="z"), Linkage.LINKED),  # first start
        (Cursor(9, h("a", 9)), chain("b", 10, 14), Linkage.FORKED),
        (Cursor(9, h("a", 9)), [*chain("a", 10, 11), *chain("b", 12, 13)], Linkage.TORN),
        (Cursor(9, h("a", 9)), [], Linkage.LINKED),
    ],
)
def test_linkage(cursor: Cursor, headers: list[BlockHeader], expected: Linkage) -> None:
    assert check_linkage(cursor, headers) is expected


def test_a_batch_that_does_not_start_after_the_cursor_is_a_bug() -> None:
    with pytest.raises(ValueError, match="cursor"):
        check_linkage(Cursor(9, h("a", 9)), chain("a", 11, 12))


@given(
    window_start=st.integers(0, 1000),
    window=st.integers(1, 256),
    data=st.data(),
)
def test_the_ancestor_is_the_fork_point(
    window_start: int, window: int, data: st.DataObject
) -> None:
    top = window_start + window - 1
    fork = data.draw(st.integers(window_start, top), label="fork")  # last common block
    new_top = data.draw(st.integers(fork, top + 10), label="new head")
    stored = {n: h("a", n) for n in range(window_start, top + 1)}
    canonical: dict[int, str | None] = {
        n: (h("a", n) if n <= fork else h("b", n)) if n <= new_top else None for n in stored
    }
    assert common_ancestor(stored, canonical) == Cursor(fork, h("a", fork))


@given(window_start=st.integers(0, 1000), window=st.integers(0, 256))
def test_a_fork_below_the_window_is_a_deep_reorg(window_start: int, window: int) -> None:
    stored = {n: h("a", n) for n in range(window_start, window_start + window)}
    canonical: dict[int, str | None] = {n: h("b", n) for n in stored}
    with pytest.raises(DeepReorgError, match="deeper than the window"):
        common_ancestor(stored, canonical)


TOKEN = "0x" + "e" * 40


def deposit(
    tx: str, transfer_index: int, block: int, tag: str = "b", *, log_index: int = 0
) -> ChainTransfer:
    return ChainTransfer(
        block_number=block, block_hash=h(tag, block), block_time=0, tx_hash=tx,
        tx_index=0, log_index=log_index, token=TOKEN,
        from_address="0x" + "1" * 40, to_address="0x" + "2" * 40, amount=1,
        transfer_index=transfer_index,
    )  # fmt: skip


def orphan(tx: str, transfer_index: int, block: int, *, log_index: int = 0) -> PublishedDeposit:
    return PublishedDeposit(
        block, h("a", block), tx, log_index, "0x" + "2" * 40, TOKEN, transfer_index
    )


def test_retractions_spare_transfers_mined_again() -> None:
    orphans = [orphan("0xt1", -1, 11), orphan("0xt2", 3, 12), orphan("0xt3", 0, 12)]
    again = [deposit("0xt2", 3, 13), deposit("0xt3", 1, 12)]  # t3 log 0 is gone, log 1 new
    assert retractions(orphans, again) == [orphans[0], orphans[2]]


def test_a_transfer_mined_again_at_another_position_of_its_block_is_not_retracted() -> None:
    # The block-wide log index differs on the new branch (other transactions came
    # first); the transfer's position in its transaction does not.
    orphans = [orphan("0xt1", 0, 12, log_index=3)]
    again = [deposit("0xt1", 0, 14, log_index=41)]
    assert retractions(orphans, again) == []


def test_an_orphan_published_before_identities_is_retracted() -> None:
    legacy = PublishedDeposit(12, h("a", 12), "0xt1", 3, "0x" + "2" * 40)
    assert retractions([legacy], [deposit("0xt1", 0, 14, log_index=3)]) == [legacy]


def test_retractions_name_each_transfer_once() -> None:
    orphans = [orphan("0xt1", 0, 11), orphan("0xt1", 0, 12)]
    assert retractions(orphans, []) == [orphans[0]]


def test_a_transfer_mined_again_for_another_amount_or_recipient_is_retracted() -> None:
    # The same transaction re-mined on the new branch can make another transfer at the
    # same position (its code read the block, a balance...): that is not the deposit
    # that was published, so the published one is retracted and the new one stands alone.
    published = orphan("0xt1", 0, 12)._replace(amount=1)
    less = deposit("0xt1", 0, 14)._replace(amount=0)
    elsewhere = deposit("0xt1", 0, 14)._replace(to_address="0x" + "3" * 40)
    assert retractions([published], [less]) == [published]
    assert retractions([published], [elsewhere]) == [published]
    assert retractions([published], [deposit("0xt1", 0, 14)]) == []
