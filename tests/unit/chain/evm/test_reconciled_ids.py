"""The identity of reconciled deposits by the transactions that paid them
(``chain.evm.reconciled_ids``), on simulated blocks and their prestate-diff traces.

A simulated block holds, for one intent address, transactions in order: payments to
it (some fail), transactions it sends (value and fee; some fail), and contract calls
that pay it internally. Split by transaction, the block's reconciled deposit must give
exactly what each contract call paid, under an identity that does not depend on the
block; a trace that does not fit leaves the block identity, never a larger credit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from intentd.chain.blocks import BlockHeader
from intentd.chain.evm.balances import (
    Reconciled,
    explained,
    movements,
    reconciled_deposits,
    reconciled_tx_hash,
)
from intentd.chain.evm.reconciled_ids import (
    by_transaction,
    reconciled_by_transaction,
    traced_changes,
)
from intentd.chain.transfers import ChainTransfer

ADDRESS = "0x" + "a" * 40
PAYER = "0x" + "c" * 40
ROUTER = "0x" + "d" * 40
START = 10**20
ALWAYS = Reconciled(ADDRESS, 0, 10**12)


@dataclass(frozen=True)
class Tx:
    kind: str  # "in": a payment to the address; "out": sent by it; "via": a contract pays it
    value: int
    ok: bool = True
    fee: int = 0
    nonce: int = 0

    @property
    def hash(self) -> str:
        return "0x" + hashlib.sha256(repr(self).encode()).hexdigest()


TXS = st.lists(
    st.builds(
        Tx,
        kind=st.sampled_from(["in", "out", "via"]),
        value=st.integers(0, 10**18),
        ok=st.booleans(),
        fee=st.integers(0, 10**15),
        nonce=st.integers(0, 10**6),
    ),
    max_size=6,
    unique_by=lambda t: t.hash,
)


def header(number: int) -> BlockHeader:
    return BlockHeader(number, f"0x{number:064x}", f"0x{number - 1:064x}", 1_000 + number)


def simulate(
    txs: list[Tx], number: int
) -> tuple[BlockHeader, dict[str, Any], list[dict[str, Any]], list[int], dict[str, int]]:
    """The block at ``number`` with ``txs``: its header, its full block, its trace, the
    address's balances around it, and what each transaction explains at top level."""
    head = header(number)
    block: dict[str, Any] = {"number": hex(number), "hash": head.hash, "transactions": []}
    trace = []
    receipts = {}
    balance = START
    for tx in txs:
        sender, to = {"in": (PAYER, ADDRESS), "out": (ADDRESS, PAYER), "via": (PAYER, ROUTER)}[
            tx.kind
        ]
        block["transactions"].append(
            {"hash": tx.hash, "from": sender, "to": to, "value": hex(tx.value)}
        )
        receipts[tx.hash] = {"status": "0x1" if tx.ok else "0x0", "gasUsed": hex(tx.fee),
                             "effectiveGasPrice": "0x1", "blockHash": head.hash}  # fmt: skip
        before = balance
        if tx.ok:
            balance += {"in": tx.value, "out": -tx.value, "via": tx.value}[tx.kind]
        if tx.kind == "out":
            balance -= tx.fee
        diff: dict[str, Any] = {"pre": {}, "post": {}}
        if balance != before:
            diff = {"pre": {ADDRESS: {"balance": hex(before)}},
                    "post": {ADDRESS: {"balance": hex(balance)}}}  # fmt: skip
        trace.append({"txHash": tx.hash, "result": diff})
    moved = movements([block], {ADDRESS})
    by_tx = explained(moved, receipts, {number: head.hash}).get(ADDRESS, {}).get(number, {})
    return head, block, trace, [START, balance], by_tx


def identified(txs: list[Tx], number: int) -> list[ChainTransfer] | None:
    """The block's reconciled deposits, split by transaction (None: not accounted for)."""
    head, block, trace, balances, by_tx = simulate(txs, number)
    found = reconciled_deposits(ALWAYS, [head], balances, {number: sum(by_tx.values())})
    if not found:
        return []
    [deposit] = found
    changes = traced_changes(trace, block["transactions"], ADDRESS)
    assert changes is not None
    return by_transaction(deposit, changes, by_tx)


@given(TXS, st.integers(1, 10**6), st.integers(1, 10**6))
def test_each_contract_call_is_a_deposit_identified_the_same_in_any_block(
    txs: list[Tx], number: int, other: int
) -> None:
    paid = {t.hash: t.value for t in txs if t.kind == "via" and t.ok and t.value}
    found = identified(txs, number)

    assert found is not None
    assert [(d.tx_hash, d.amount) for d in found] == [
        (reconciled_by_transaction(ADDRESS, h), v) for h, v in paid.items()
    ]
    again = identified(txs, other)  # the same transactions mined at another height
    assert again is not None
    assert [(d.tx_hash, d.amount) for d in again] == [(d.tx_hash, d.amount) for d in found]


@given(TXS, st.integers(0, 5), st.integers(1, 10**18))
def test_a_trace_that_does_not_fit_the_block_keeps_its_identity_and_amount(
    txs: list[Tx], drop: int, extra: int
) -> None:
    """A trace missing a transaction, or a credit outside any transaction (a
    withdrawal, a system credit): never more than the balances show."""
    head, block, trace, balances, by_tx = simulate(txs, 50)
    balances[1] += extra  # arrived outside the block's transactions
    [deposit] = reconciled_deposits(ALWAYS, [head], balances, {50: sum(by_tx.values())})
    changes = traced_changes(trace, block["transactions"], ADDRESS)
    assert changes is not None
    assert by_transaction(deposit, changes, by_tx) is None
    assert deposit.tx_hash == reconciled_tx_hash(ADDRESS, head.hash)
    if txs:
        del trace[drop % len(trace)]
        assert traced_changes(trace, block["transactions"], ADDRESS) is None


def test_a_trace_of_another_transaction_or_a_failed_entry_does_not_fit() -> None:
    txs = [Tx("via", 5)]
    _, block, trace, _, _ = simulate(txs, 9)
    assert traced_changes(trace, block["transactions"], ADDRESS) == [(txs[0].hash, 0, 5)]
    other = [trace[0] | {"txHash": "0x" + "e" * 64}]
    assert traced_changes(other, block["transactions"], ADDRESS) is None
    assert traced_changes([{"error": "out of gas"}], block["transactions"], ADDRESS) is None
    assert traced_changes([], block["transactions"], ADDRESS) is None


def test_the_identity_is_a_hash_per_address_and_transaction_unlike_the_block_one() -> None:
    tx = "0x" + "1" * 64
    one = reconciled_by_transaction(ADDRESS, tx)
    assert one == reconciled_by_transaction(ADDRESS, tx)
    assert one != reconciled_by_transaction(PAYER, tx)
    assert one != reconciled_by_transaction(ADDRESS, "0x" + "2" * 64)
    assert one != reconciled_tx_hash(ADDRESS, tx)  # domain-separated
