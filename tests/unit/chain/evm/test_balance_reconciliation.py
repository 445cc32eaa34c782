"""The arithmetic of the balance reconciliation (``chain.evm.balances``), on simulated chains.

A simulated block holds, for one intent address, top-level payments to it (some fail),
transactions it sends (value and fee; some fail, and pay the fee anyway) and value
that arrives by internal calls. The reconciliation must find exactly the internal
value of each block, never a top-level payment, and never more than arrived.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.chain.blocks import BlockHeader
from intentd.chain.evm.balances import (
    UNKNOWN_SENDER,
    Movement,
    Reconciled,
    explained_change,
    fee,
    movements,
    reconciled_deposits,
    reconciled_tx_hash,
)
from intentd.chain.evm.decoding import NATIVE
from intentd.messages import HASH_PATTERN

ADDRESS = "0x" + "a" * 40
OTHER = "0x" + "b" * 40


@dataclass(frozen=True)
class Tx:
    incoming: bool  # to the address (else sent by it)
    value: int
    ok: bool
    gas_used: int = 0
    price: int = 0
    l1_fee: int = 0


@dataclass(frozen=True)
class SimBlock:
    txs: list[Tx]
    internal: int


def tx_strategy() -> st.SearchStrategy[Tx]:
    return st.builds(
        Tx,
        incoming=st.booleans(),
        value=st.integers(0, 10**18),
        ok=st.booleans(),
        gas_used=st.integers(21_000, 200_000),
        price=st.integers(0, 10**11),
        l1_fee=st.integers(0, 10**13),
    )


blocks_strategy = st.lists(
    st.builds(SimBlock, txs=st.lists(tx_strategy(), max_size=4), internal=st.integers(0, 10**18)),
    min_size=1,
    max_size=12,
)


def header(number: int) -> BlockHeader:
    return BlockHeader(number, f"0x{number:064x}", f"0x{number - 1:064x}", 1_000 + 12 * number)


def receipt(tx: Tx, *, show_l1_fee: bool = True) -> dict[str, Any]:
    found = {
        "status": "0x1" if tx.ok else "0x0",
        "gasUsed": hex(tx.gas_used),
        "effectiveGasPrice": hex(tx.price),
    }
    if show_l1_fee:
        found["l1Fee"] = hex(tx.l1_fee)
    return found


def simulate(
    blocks: list[SimBlock], start: int = 10**20, *, show_l1_fee: bool = True
) -> tuple[list[BlockHeader], list[int], dict[int, int]]:
    """Headers, the balances (before the first block, then after each) and what each
    block's top-level transactions explain, as the reconciliation would read them."""
    headers = [header(100 + i) for i in range(len(blocks))]
    balances = [start]
    explained: dict[int, int] = {}
    for head, block in zip(headers, blocks, strict=True):
        balance = balances[-1] + block.internal
        for tx in block.txs:
            movement = Movement(
                head.number,
                "0x" + "1" * 64,
                ADDRESS,
                tx.value if tx.incoming else 0,
                0 if tx.incoming else tx.value,
                not tx.incoming,
            )
            if tx.ok:
                balance += tx.value if tx.incoming else -tx.value
            if not tx.incoming:
                balance -= tx.gas_used * tx.price + tx.l1_fee
            change = explained_change(movement, receipt(tx, show_l1_fee=show_l1_fee))
            explained[head.number] = explained.get(head.number, 0) + change
        balances.append(balance)
    return headers, balances, explained


ALWAYS = Reconciled(ADDRESS, 0, 10**12)


@given(blocks_strategy)
def test_exactly_the_internal_value_of_each_block_is_found(blocks: list[SimBlock]) -> None:
    headers, balances, explained = simulate(blocks)
    found = reconciled_deposits(ALWAYS, headers, balances, explained)
    expected = [(h.number, b.internal) for h, b in zip(headers, blocks, strict=True) if b.internal]
    assert [(d.block_number, d.amount) for d in found] == expected
    for deposit in found:
        assert (deposit.token, deposit.to_address, deposit.log_index) == (NATIVE, ADDRESS, -1)
        assert deposit.from_address == UNKNOWN_SENDER
        assert deposit.tx_hash == reconciled_tx_hash(ADDRESS, deposit.block_hash)


@given(blocks_strategy)
def test_a_fee_the_receipt_does_not_show_can_only_make_a_credit_smaller(
    blocks: list[SimBlock],
) -> None:
    headers, balances, explained = simulate(blocks, show_l1_fee=False)
    found = {
        d.block_number: d.amount for d in reconciled_deposits(ALWAYS, headers, balances, explained)
    }
    for head, block in zip(headers, blocks, strict=True):
        assert 0 <= found.get(head.number, 0) <= block.internal


@given(blocks_strategy, st.lists(st.integers(1, 11), max_size=4))
def test_any_split_into_batches_finds_the_same_deposits(
    blocks: list[SimBlock], cuts: list[int]
) -> None:
    """A batch read again after a crash may cover other blocks: same deposits, same ids."""
    headers, balances, explained = simulate(blocks)
    whole = reconciled_deposits(ALWAYS, headers, balances, explained)
    edges = sorted({0, len(headers), *(c for c in cuts if c < len(headers))})
    parts = []
    for first, last in itertools.pairwise(edges):
        parts += reconciled_deposits(
            ALWAYS, headers[first:last], balances[first : last + 1], explained
        )
    assert parts == whole


@given(blocks_strategy, st.integers(0, 11), st.integers(0, 11))
def test_only_blocks_inside_the_window_are_credited(
    blocks: list[SimBlock], first: int, span: int
) -> None:
    headers, balances, explained = simulate(blocks)
    window = Reconciled(ADDRESS, 1_000 + 12 * (100 + first), 1_000 + 12 * (100 + first + span))
    found = reconciled_deposits(window, headers, balances, explained)
    assert all(window.covers(d.block_time) for d in found)
    inside = [h.number for h, b in zip(headers, blocks, strict=True) if b.internal]
    assert [d.block_number for d in found] == [
        n for n in inside if first <= n - 100 <= first + span
    ]


def test_the_fee_counts_gas_the_l1_fee_and_blob_gas() -> None:
    assert fee({"gasUsed": "0x5208", "effectiveGasPrice": "0x2"}) == 42_000
    assert fee({"gasUsed": "0x1", "effectiveGasPrice": "0x3", "l1Fee": "0x10"}) == 19
    assert fee({"gasUsed": "0x1", "effectiveGasPrice": "0x1", "blobGasUsed": "0x2",
                "blobGasPrice": "0x5"}) == 11  # fmt: skip


def test_a_failed_payment_explains_nothing_and_a_failed_send_only_its_fee() -> None:
    paid = {"status": "0x0", "gasUsed": "0x2", "effectiveGasPrice": "0x3"}
    assert explained_change(Movement(1, "0x", ADDRESS, 50, 0, False), paid) == 0
    assert explained_change(Movement(1, "0x", ADDRESS, 0, 50, True), paid) == -6
    assert (
        explained_change(Movement(1, "0x", ADDRESS, 50, 50, True), {**paid, "status": "0x1"}) == -6
    )


def test_movements_are_the_transactions_to_or_from_the_addresses() -> None:
    def tx(sender: str, to: str | None, value: int, n: int) -> dict[str, Any]:
        return {"from": sender, "to": to, "value": hex(value), "hash": f"0x{n:064x}"}

    block = {
        "number": "0x7",
        "transactions": [
            tx(OTHER, ADDRESS.upper().replace("X", "x"), 5, 1),  # a payment (any case)
            tx(OTHER, ADDRESS, 0, 2),  # no value: moves nothing
            tx(ADDRESS, OTHER, 3, 3),  # sent by the address
            tx(ADDRESS, ADDRESS, 4, 4),  # to itself: only the fee
            tx(OTHER, None, 9, 5),  # a contract creation
            tx(OTHER, OTHER, 9, 6),  # not ours
        ],
    }
    assert movements([block], {ADDRESS}) == [
        Movement(7, f"0x{1:064x}", ADDRESS, 5, 0, False),
        Movement(7, f"0x{3:064x}", ADDRESS, 0, 3, True),
        Movement(7, f"0x{4:064x}", ADDRESS, 4, 4, True),
    ]


def test_the_synthetic_hash_is_a_hash_per_address_and_block() -> None:
    one = reconciled_tx_hash(ADDRESS, "0x" + "1" * 64)
    assert re.match(HASH_PATTERN, one)
    assert one == reconciled_tx_hash(ADDRESS, "0x" + "1" * 64)
    assert one != reconciled_tx_hash(OTHER, "0x" + "1" * 64)
    assert one != reconciled_tx_hash(ADDRESS, "0x" + "2" * 64)


def test_balances_must_frame_the_blocks() -> None:
    with pytest.raises(ValueError, match="need 3 balances"):
        reconciled_deposits(ALWAYS, [header(1), header(2)], [0, 1], {})


def test_the_window_of_an_intent_starts_before_creation_and_ends_after_expiry() -> None:
    window = Reconciled.of_intent(ADDRESS.upper().replace("X", "x"), 10_000, 20_000)
    assert window.address == ADDRESS
    assert window.covers(10_000 - 300) and not window.covers(10_000 - 301)
    assert window.covers(20_000 + 3600) and not window.covers(20_000 + 3601)
