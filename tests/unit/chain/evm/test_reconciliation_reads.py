"""What :class:`Reconciliation` reads per batch: bounded, batched, consistent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from intentd.chain.blocks import BlockHeader
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.balances import Reconciled, reconciled_tx_hash
from intentd.chain.evm.reconciled_ids import reconciled_by_transaction
from intentd.chain.evm.reconciliation import Reconciliation

A = "0x" + "a" * 40
B = "0x" + "b" * 40
PAYER = "0x" + "c" * 40


def block_hash(n: int) -> str:
    return f"0x{n:064x}"


def header(n: int) -> BlockHeader:
    return BlockHeader(n, block_hash(n), block_hash(n - 1), 1_000 + n)


def full_block(n: int, txs: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    return {"number": hex(n), "transactions": list(txs)}


class FakeState:
    """Balances by (address, block hash); receipts by hash; traces by block hash (none:
    an empty trace); counts the calls."""

    def __init__(self) -> None:
        self.balance: dict[tuple[str, str], int] = {}
        self.receipt: dict[str, dict[str, Any]] = {}
        self.trace: dict[str, list[dict[str, Any]]] = {}
        self.balance_calls: list[int] = []  # calls per JSON-RPC batch
        self.receipt_calls: list[int] = []
        self.trace_calls: list[list[str]] = []
        self.traces_served = True

    async def balances(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        self.balance_calls.append(len(queries))
        return [self.balance.get(q, 0) for q in queries]

    async def receipts(self, tx_hashes: Sequence[str]) -> list[Mapping[str, Any]]:
        self.receipt_calls.append(len(tx_hashes))
        return [self.receipt[h] for h in tx_hashes]

    async def traces(self, block_hashes: Sequence[str]) -> list[Sequence[Any] | None]:
        self.trace_calls.append(list(block_hashes))
        if not self.traces_served:
            return [None for _ in block_hashes]
        return [self.trace.get(h, []) for h in block_hashes]


class Open:
    def __init__(self, *windows: Reconciled) -> None:
        self.windows = list(windows)

    async def reconciled(self, first_time: int, last_time: int) -> list[Reconciled]:
        return self.windows


def everywhere(address: str) -> Reconciled:
    return Reconciled(address, 0, 10**9)


def set_balances(state: FakeState, address: str, by_block: dict[int, int]) -> None:
    for n, value in by_block.items():
        state.balance[(address, block_hash(n))] = value


async def test_a_quiet_batch_costs_one_batched_balance_read_per_address_once_following() -> None:
    state = FakeState()
    reconciliation = Reconciliation("C", state, Open(everywhere(A), everywhere(B)))
    first = [header(n) for n in range(10, 20)]
    assert await reconciliation.find(first, [full_block(h.number) for h in first]) == []
    second = [header(n) for n in range(20, 30)]
    assert await reconciliation.find(second, [full_block(h.number) for h in second]) == []
    assert state.balance_calls == [4, 2]  # before and after; then after only
    assert state.receipt_calls == []


async def test_an_unexplained_increase_is_located_by_one_more_read_of_the_batch() -> None:
    state = FakeState()
    set_balances(state, A, {9: 5, 10: 5, 11: 5, 12: 105, 13: 105, 14: 105})
    payment = {"from": PAYER, "to": A, "value": hex(7), "hash": "0x" + "1" * 64}
    state.receipt["0x" + "1" * 64] = {
        "status": "0x1",
        "gasUsed": "0x5208",
        "effectiveGasPrice": "0x1",
        "blockHash": block_hash(13),
    }
    set_balances(state, A, {13: 112, 14: 112})
    headers = [header(n) for n in range(10, 15)]
    blocks = [full_block(h.number, [payment] if h.number == 13 else []) for h in headers]
    reconciliation = Reconciliation("C", state, Open(everywhere(A)))

    found = await reconciliation.find(headers, blocks)

    assert [(d.block_number, d.amount, d.tx_hash) for d in found] == [
        (12, 100, reconciled_tx_hash(A, block_hash(12)))
    ]  # the top-level payment of 7 in block 13 is explained, not credited again
    assert state.balance_calls == [2, 4]
    assert state.receipt_calls == [1]
    assert state.trace_calls == [[block_hash(12)]]  # only the block with a deposit


async def test_a_provider_that_does_not_trace_keeps_the_block_identity_and_finds_the_deposit() -> (
    None
):
    state = FakeState()
    state.traces_served = False
    set_balances(state, A, {9: 5, 10: 5, 11: 55, 12: 55})
    headers = [header(n) for n in range(10, 13)]
    reconciliation = Reconciliation("C", state, Open(everywhere(A)))

    found = await reconciliation.find(headers, [full_block(h.number) for h in headers])

    assert [(d.block_number, d.amount, d.tx_hash) for d in found] == [
        (11, 50, reconciled_tx_hash(A, block_hash(11)))
    ]


async def test_addresses_outside_their_window_are_not_read() -> None:
    state = FakeState()
    reconciliation = Reconciliation("C", state, Open(Reconciled(A, 0, 500)))
    headers = [header(n) for n in range(10, 12)]
    assert await reconciliation.find(headers, [full_block(h.number) for h in headers]) == []
    assert state.balance_calls == []


async def test_a_receipt_from_another_block_is_an_inconsistent_answer() -> None:
    state = FakeState()
    payment = {"from": PAYER, "to": A, "value": hex(7), "hash": "0x" + "1" * 64}
    state.receipt["0x" + "1" * 64] = {
        "status": "0x1",
        "gasUsed": "0x0",
        "effectiveGasPrice": "0x0",
        "blockHash": block_hash(99),
    }
    headers = [header(10)]
    reconciliation = Reconciliation("C", state, Open(everywhere(A)))
    with pytest.raises(InconsistentAnswer, match="not from block 10"):
        await reconciliation.find(headers, [full_block(10, [payment])])


async def test_given_addresses_need_no_source() -> None:
    state = FakeState()
    set_balances(state, A, {10: 3})
    found = await Reconciliation("C", state).find([header(10)], [full_block(10)], [everywhere(A)])
    assert [(d.block_number, d.amount) for d in found] == [(10, 3)]
    with pytest.raises(ValueError, match="no source"):
        await Reconciliation("C", state).find([header(10)], [full_block(10)])


def contract_call(n: int) -> dict[str, Any]:
    """A transaction to a contract (say, a payment router): no value to any intent."""
    return {"from": PAYER, "to": "0x" + "d" * 40, "value": "0x0", "hash": f"0x{n:064x}"}


def diff(address: str, before: int, after: int) -> dict[str, Any]:
    """One transaction's prestate-diff trace entry: ``address`` went from ``before`` to
    ``after``."""
    return {"pre": {address: {"balance": hex(before)}}, "post": {address: {"balance": hex(after)}}}


async def test_a_rise_is_identified_by_the_transactions_that_paid_it_in_any_block() -> None:
    """Fork A pays A 100 by contract call 1 in block 12; fork B mines that call in
    block 13 (after another call paying 50, and with B paid by call 1 too): the call's
    deposit to A is the same deposit on both forks; the other call is another one."""
    fork_a, fork_b = FakeState(), FakeState()
    set_balances(fork_a, A, {9: 5, 10: 5, 11: 5, 12: 105, 13: 105})
    fork_a.trace[block_hash(12)] = [{"txHash": f"0x{1:064x}", "result": diff(A, 5, 105)}]
    set_balances(fork_b, A, {9: 5, 10: 5, 11: 5, 12: 5, 13: 155})
    set_balances(fork_b, B, {9: 0, 13: 9})
    fork_b.trace[block_hash(13)] = [
        {"txHash": f"0x{2:064x}", "result": diff(A, 5, 55)},
        {"txHash": f"0x{1:064x}", "result": diff(A, 55, 155) | {"post": {
            A: {"balance": hex(155)}, B: {"balance": hex(9)}}}},
    ]  # fmt: skip
    headers = [header(n) for n in range(10, 14)]

    def blocks(calls: dict[int, list[int]]) -> list[dict[str, Any]]:
        return [full_block(h.number, [contract_call(c) for c in calls.get(h.number, [])])
                for h in headers]  # fmt: skip

    found_a = await Reconciliation("C", fork_a, Open(everywhere(A))).find(
        headers, blocks({12: [1]})
    )
    found_b = await Reconciliation("C", fork_b, Open(everywhere(A), everywhere(B))).find(
        headers, blocks({13: [2, 1]})
    )

    paid_by_1 = reconciled_by_transaction(A, f"0x{1:064x}")
    assert [(d.block_number, d.tx_hash, d.amount) for d in found_a] == [(12, paid_by_1, 100)]
    assert [(d.to_address, d.block_number, d.tx_hash, d.amount) for d in found_b] == [
        (A, 13, reconciled_by_transaction(A, f"0x{2:064x}"), 50),
        (A, 13, paid_by_1, 100),
        (B, 13, reconciled_by_transaction(B, f"0x{1:064x}"), 9),
    ]
    assert fork_b.trace_calls == [[block_hash(13)]]  # one trace per block, for both


async def test_a_trace_that_does_not_account_for_a_rise_leaves_its_block_identity() -> None:
    state = FakeState()
    set_balances(state, A, {9: 5, 10: 105})
    state.trace[block_hash(10)] = [{"txHash": f"0x{1:064x}", "result": diff(A, 5, 55)}]
    reconciliation = Reconciliation("C", state, Open(everywhere(A)))

    [found] = await reconciliation.find([header(10)], [full_block(10, [contract_call(1)])])

    assert (found.tx_hash, found.amount) == (reconciled_tx_hash(A, block_hash(10)), 100)


async def test_with_block_identities_no_trace_is_read() -> None:
    state = FakeState()
    set_balances(state, A, {9: 5, 10: 105})
    reconciliation = Reconciliation("C", state, Open(everywhere(A)), by_transaction=False)
    [found] = await reconciliation.find([header(10)], [full_block(10, [contract_call(1)])])
    assert found.tx_hash == reconciled_tx_hash(A, block_hash(10))
    assert state.trace_calls == []
