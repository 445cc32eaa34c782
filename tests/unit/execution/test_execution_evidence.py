"""What a verdict may rest on (``execution.evidence``): one node's view and its
consistency, packs that fit one request, the search for the block that used a nonce,
and the proof read from that block."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.execution.evidence import (
    BlockTx,
    ChainView,
    NonceSearch,
    merge_views,
    pack_groups,
    prove_use,
    view_problem,
)
from intentd.execution.gas import Fees
from intentd.execution.tracking import NonceUse, Receipt, Tx, TxStatus
from intentd.execution.tx_plans import Purpose

SIGNER = "0x" + "aa" * 20
OTHER = "0x" + "bb" * 20


def receipt(tx_hash: str, block: int, block_hash: str | None = None) -> Receipt:
    return Receipt(tx_hash, block, block_hash or f"0x{block:064x}", True, 21_000, 5)


def tx(n: int, signer: str = SIGNER, nonce: int = 0) -> Tx:
    return Tx(
        id=n, action_id=n, purpose=Purpose.TRANSFER, signer=signer, nonce=nonce,
        tx_hash=f"0x{n:064x}", raw=b"", to=OTHER, value=0, gas_limit=21_000, fees=Fees(10, 1),
        status=TxStatus.SENT, block_number=None, age=0.0,
    )  # fmt: skip


# --- a view ------------------------------------------------------------------------------


def test_a_view_from_a_node_below_the_block_asked_is_not_judged() -> None:
    view = ChainView(head=97, nonces={SIGNER: 3}, receipts={})
    assert view_problem(view, asked=98) == "the node is at block 97, below block 98 asked"
    assert view_problem(view, asked=97) is None


def test_a_view_with_a_receipt_above_its_own_head_is_not_judged() -> None:
    view = ChainView(head=100, nonces={}, receipts={"0x1": receipt("0x1", 101), "0x2": None})
    assert view_problem(view, asked=98) == "receipts in block 101, above the node's head 100"
    fine = ChainView(head=101, nonces={}, receipts={"0x1": receipt("0x1", 101), "0x2": None})
    assert view_problem(fine, asked=98) is None


def test_views_merge_on_the_safe_side() -> None:
    found = receipt("0x1", 97)
    a = ChainView(head=100, nonces={SIGNER: 5}, receipts={"0x1": None, "0x2": None})
    b = ChainView(head=98, nonces={SIGNER: 4}, receipts={"0x1": found, "0x3": None})
    merged = merge_views([a, b])
    assert merged == ChainView(98, {SIGNER: 4}, {"0x1": found, "0x2": None, "0x3": None})
    with pytest.raises(ValueError, match="no view"):
        merge_views([])


groups = st.lists(
    st.tuples(st.sampled_from([SIGNER, OTHER, "0x" + "cc" * 20]), st.integers(1, 6)),
    max_size=40,
)


@given(groups, st.integers(8, 60))
def test_packs_keep_the_order_and_fit_one_request(shape: list[tuple[str, int]], size: int) -> None:
    items = [(i, [tx(i * 10 + k, signer) for k in range(n)]) for i, (signer, n) in enumerate(shape)]
    packs = pack_groups(items, size)
    assert [item for pack in packs for item in pack] == items
    for pack in packs:
        calls = 1 + len({g[0].signer for _, g in pack}) + sum(len(g) for _, g in pack)
        assert calls <= size or len(pack) == 1
    assert all(packs)


# --- the search --------------------------------------------------------------------------


def run(search: NonceSearch, counts: list[int]) -> int | None:
    while (probe := search.probe()) is not None:
        search.answer(probe, counts[probe])
    return search.found


@given(st.lists(st.integers(0, 2), min_size=1, max_size=3000), st.data())
def test_the_search_finds_the_block_where_the_count_passed_the_nonce(
    steps: list[int], data: st.DataObject
) -> None:
    counts = [sum(steps[: i + 1]) for i in range(len(steps))]  # block i's count, monotone
    through = len(counts) - 1
    if counts[through] == 0:
        return
    nonce = data.draw(st.integers(0, counts[through] - 1))
    search = NonceSearch(nonce, through)
    found = run(search, counts)
    first = next(b for b, c in enumerate(counts) if c > nonce)
    assert found == (first if first > 0 else None)  # past it at genesis: no block holds it
    distance = through - first + 1
    assert search.probes <= 2 * distance.bit_length() + 1


@given(st.lists(st.integers(0, 50), min_size=2, max_size=500), st.integers(0, 50))
def test_the_search_ends_whatever_the_counts(counts: list[int], nonce: int) -> None:
    through = len(counts) - 1
    search = NonceSearch(nonce, through)
    found = run(search, counts)
    assert search.probes <= 2 * through.bit_length() + 2
    assert found is None or 0 < found <= through


def test_a_probe_answered_out_of_turn_is_refused() -> None:
    search = NonceSearch(3, 100)
    with pytest.raises(ValueError, match="not the probe"):
        search.answer(50, 4)


# --- the proof ---------------------------------------------------------------------------

BLOCK_HASH = "0x" + "ab" * 32
FOREIGN = "0x" + "ee" * 32
OURS = f"0x{1:064x}"


def prove(**changes: object) -> NonceUse | None:
    args: dict[str, object] = {
        "before": 7, "after": 8, "block_hash": BLOCK_HASH,
        "txs": [BlockTx(OTHER, 7, "0x" + "dd" * 32), BlockTx(SIGNER.upper(), 7, FOREIGN)],
        "receipts": {OURS: None},
    }  # fmt: skip
    args.update(changes)
    return prove_use(SIGNER, 7, 40, **args)  # type: ignore[arg-type]


def test_a_block_that_holds_the_signers_transaction_on_the_nonce_proves_who_used_it() -> None:
    assert prove() == NonceUse(40, BLOCK_HASH, FOREIGN, None)


def test_ours_found_in_the_block_comes_with_its_receipt_from_that_block() -> None:
    mine = [BlockTx(SIGNER, 7, OURS)]
    found = prove(txs=mine, receipts={OURS: receipt(OURS, 40, BLOCK_HASH)})
    assert found == NonceUse(40, BLOCK_HASH, OURS, receipt(OURS, 40, BLOCK_HASH))
    elsewhere = prove(txs=mine, receipts={OURS: receipt(OURS, 41)})  # another node's fork
    assert elsewhere == NonceUse(40, BLOCK_HASH, OURS, None)


@pytest.mark.parametrize(
    "changes",
    [
        {"before": 8},  # the count had passed the nonce already before the block
        {"after": 7},  # nor does it pass it in the block
        {"block_hash": None},  # the node does not have the block
        {"txs": [BlockTx(SIGNER, 6, FOREIGN)]},  # the block does not hold it
        {"txs": [BlockTx(SIGNER, 7, FOREIGN), BlockTx(SIGNER, 7, OURS)]},  # nonsense
    ],
)
def test_an_answer_that_does_not_hold_together_proves_nothing(changes: dict[str, object]) -> None:
    assert prove(**changes) is None
