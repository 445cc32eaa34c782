"""Second-provider confirmation of reconciled deposits (ETH that arrived through a
contract), on a simulated block: the claims of a block must fit what its top-level
transactions do not explain, together; a provider that lags decides nothing.

A lying primary provider can report a reconciled deposit of X beside a real top-level
payment of X in the same block: the balance rose by X, once. The second provider must
not confirm both (the intent would be FUNDED with 2X when X arrived, and prefilled).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from intentd.chain.evm.balances import UNKNOWN_SENDER, reconciled_tx_hash
from intentd.chain.evm.reconciled_ids import reconciled_by_transaction
from intentd.domain.actions import NATIVE
from intentd.execution.deposit_check import Credited
from intentd.execution.deposit_verifier import confirm
from intentd.settings import ChainConfig

INTENT = "0x" + "11" * 20
PAYER = "0x" + "22" * 20
ROUTER = "0x" + "33" * 20
PARENT = "0x" + "af" * 32
BLOCK = "0x" + "b0" * 32
OTHER_BLOCK = "0x" + "b1" * 32
HEIGHT = 100
START = 10**20
CHAIN = ChainConfig(name="SRC", chain_id=1, network="test", rpc_urls=["http://a"], confirmations=3)


@dataclass(frozen=True)
class Tx:
    """A top-level transaction of the block: a payment to the intent address, or one
    the address sends (it pays the fee whether or not it succeeds)."""

    incoming: bool
    value: int
    ok: bool = True
    fee: int = 0


@dataclass
class Node:
    """A second provider that has block :data:`HEIGHT` (:data:`BLOCK`, child of
    :data:`PARENT`), at ``head``; balances of the intent address before and after it."""

    head_number: int = 200
    hash_at_height: str | None = BLOCK
    txs: list[dict[str, Any]] = field(default_factory=list)
    receipts_by_hash: dict[str, dict[str, Any]] = field(default_factory=dict)
    balance_at: dict[str, int] = field(default_factory=dict)

    def build(self, txs: Sequence[Tx], internal: int) -> None:
        """The block's transactions, their receipts and the balances they leave, plus
        ``internal`` wei that arrived by internal calls."""
        balance = START
        for i, tx in enumerate(txs):
            tx_hash = f"0x{i + 1:064x}"
            sender, to = (PAYER, INTENT) if tx.incoming else (INTENT, PAYER)
            self.txs.append(
                {"hash": tx_hash, "from": sender, "to": to, "value": hex(tx.value),
                 "transactionIndex": hex(i)}
            )  # fmt: skip
            self.receipts_by_hash[tx_hash] = {
                "transactionHash": tx_hash, "blockHash": BLOCK, "blockNumber": hex(HEIGHT),
                "status": "0x1" if tx.ok else "0x0", "gasUsed": hex(tx.fee),
                "effectiveGasPrice": "0x1",
            }  # fmt: skip
            if tx.ok:
                balance += tx.value if tx.incoming else -tx.value
            if not tx.incoming:
                balance -= tx.fee
        self.balance_at = {PARENT: START, BLOCK: balance + internal}

    def block(self) -> dict[str, Any] | None:
        if self.hash_at_height is None:
            return None
        return {"number": hex(HEIGHT), "hash": self.hash_at_height, "parentHash": PARENT,
                "transactions": self.txs}  # fmt: skip

    # --- the second provider's port ---------------------------------------------------
    async def view(self, tag: str, number: int, *, full: bool) -> tuple[int, dict[str, Any] | None]:
        block = self.block() if number == HEIGHT else None
        if block is not None and not full:
            block = block | {"transactions": [t["hash"] for t in self.txs]}
        return self.head_number, block

    async def receipts(self, tx_hashes: Sequence[str]) -> list[dict[str, Any] | None]:
        return [self.receipts_by_hash.get(h) for h in tx_hashes]

    async def balances(self, address: str, block_hashes: Sequence[str]) -> list[int]:
        assert address == INTENT
        return [self.balance_at[h] for h in block_hashes]

    async def close(self) -> None:
        pass


def top_level(node: Node, index: int) -> Credited:
    """The credited deposit of the block's ``index``-th transaction (a payment)."""
    tx = node.txs[index]
    return Credited(tx["hash"], NATIVE, -1, INTENT, int(tx["value"], 16), HEIGHT, BLOCK, PAYER)


def claim(amount: int, cause: int = 0) -> Credited:
    """A reconciled deposit of ``amount`` in the block, identified by transaction ``cause``
    (0: by the block)."""
    tx_hash = (
        reconciled_tx_hash(INTENT, BLOCK)
        if cause == 0
        else reconciled_by_transaction(INTENT, f"0x{cause:064x}")
    )
    return Credited(tx_hash, NATIVE, -1, INTENT, amount, HEIGHT, BLOCK, UNKNOWN_SENDER)


def contradicted() -> float:
    labels = {"chain": "SRC"}
    return REGISTRY.get_sample_value("intentd_deposits_contradicted_total", labels) or 0.0


X = 10**18


async def test_a_reconciled_claim_beside_a_top_level_payment_of_the_same_rise_is_refused() -> None:
    node = Node()
    node.build([Tx(incoming=True, value=X)], internal=0)  # X arrived, once
    payment, fake = top_level(node, 0), claim(X)
    before = contradicted()

    reasons = await confirm([payment, fake], node, CHAIN)

    assert len(reasons) == 1 and reasons[0].startswith(fake.tx_hash)
    assert "unexplained" in reasons[0]
    assert contradicted() - before == 1  # evidence against the primary: an alert


async def test_a_reconciled_claim_that_fits_the_unexplained_rise_is_confirmed() -> None:
    node = Node()
    node.build([Tx(incoming=True, value=X), Tx(incoming=False, value=5, fee=21)], internal=X)
    assert await confirm([top_level(node, 0), claim(X)], node, CHAIN) == []


async def test_two_reconciled_claims_of_one_block_must_fit_its_rise_together() -> None:
    node = Node()
    node.build([], internal=X)  # X arrived through a contract, once
    first, second = claim(X, cause=7), claim(X, cause=8)

    reasons = await confirm([first, second], node, CHAIN)

    assert {r.split(":")[0] for r in reasons} == {first.tx_hash, second.tx_hash}
    assert await confirm([first, claim(X // 2, cause=8)], node, CHAIN) != []
    assert await confirm([claim(X // 2, cause=7), claim(X - X // 2, cause=8)], node, CHAIN) == []


TXS = st.lists(
    st.builds(
        Tx,
        incoming=st.booleans(),
        value=st.integers(0, 10**18),
        ok=st.booleans(),
        fee=st.integers(0, 10**15),
    ),
    max_size=5,
)


@given(TXS, st.integers(0, 10**18), st.lists(st.integers(1, 10**18), min_size=1, max_size=3))
async def test_claims_are_confirmed_exactly_when_they_fit_what_arrived_by_internal_calls(
    txs: list[Tx], internal: int, amounts: list[int]
) -> None:
    node = Node()
    node.build(txs, internal)
    claims = [claim(a, cause=i + 1) for i, a in enumerate(amounts)]
    paid = [i for i, tx in enumerate(txs) if tx.incoming and tx.ok and tx.value]
    payments = [top_level(node, i) for i in paid]

    reasons = await confirm(payments + claims, node, CHAIN)

    refused = {r.split(":")[0] for r in reasons}
    assert not refused & {p.tx_hash for p in payments}  # real payments stay confirmed
    fits = sum(amounts) <= internal
    assert refused == (set() if fits else {c.tx_hash for c in claims})


@pytest.mark.parametrize(
    ("lag", "reason"),
    [
        ("no block", "no block at 100"),
        ("other block", f"block 100 is {OTHER_BLOCK}"),
        ("shallow", "not 3 deep at 101"),
        ("no receipt", "no receipt of"),
    ],
)
async def test_a_provider_that_lags_confirms_nothing_and_accuses_no_one(
    lag: str, reason: str
) -> None:
    node = Node()
    node.build([Tx(incoming=True, value=X)], internal=X)
    if lag == "no block":
        node.hash_at_height = None
    elif lag == "other block":
        node.hash_at_height = OTHER_BLOCK
    elif lag == "shallow":
        node.head_number = HEIGHT + 1
    else:
        node.receipts_by_hash.clear()  # its receipt index trails its blocks
    before = contradicted()

    reasons = await confirm([claim(X)], node, CHAIN)

    assert len(reasons) == 1 and reason in reasons[0]
    assert contradicted() == before
