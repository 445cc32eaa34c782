"""Native value counts only with a successful receipt and a type that pays its ``to``.

Synthetic JSON-RPC answers (``tests/fixtures/rpc/system_txs.json``) shaped like the
answers of op-geth (BASE) and nitro (Arbitrum) for their system transaction types,
run through the poll loop over the in-memory fakes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.chain.chain_fakes import USDC, FakeChain, Transfer, address
from tests.unit.indexer.test_poll_loop import W1, W2, Harness, deposits

from intentd.chain.blocks import BlockRange
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.decoding import find_deposits
from intentd.chain.evm.tx_types import Credit, credit_of, settle_natives

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "rpc" / "system_txs.json"
ETH = 10**18


def fixture() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(FIXTURE.read_text())
    return loaded


def settle(data: dict[str, Any]) -> list[tuple[str, int]]:
    """(tx hash, amount) of what the recorded block credits to its watched address."""
    block = data["block"]
    number = int(block["number"], 16)
    found = find_deposits(
        [block], [], BlockRange(number, number), frozenset(), WatchedAddresses(data["watched"])
    )
    credited, _ = settle_natives(found.natives, data["receipts"])
    return [(d.tx_hash, d.amount) for d in credited]


def test_only_successful_value_of_the_paying_types_is_credited() -> None:
    data = fixture()
    expected = [(case["hash"], int(case["value"], 16)) for case in data["credited"]]
    assert settle(data) == expected


def test_a_failed_op_stack_deposit_of_100_eth_is_not_credited() -> None:
    data = fixture()
    failed = next(
        tx
        for tx in data["block"]["transactions"]
        if tx["type"] == "0x7e" and tx["to"] in data["watched"]
    )
    assert data["receipts"][failed["hash"]]["status"] == "0x0"
    assert int(failed["value"], 16) == 100 * ETH
    assert failed["hash"] not in {tx for tx, _ in settle(data)}


@pytest.mark.parametrize(
    ("tx_type", "credit"),
    [
        (0x0, Credit.WITH_RECEIPT), (0x2, Credit.WITH_RECEIPT), (0x4, Credit.WITH_RECEIPT),
        (0x7E, Credit.WITH_RECEIPT), (0x64, Credit.WITH_RECEIPT), (0x65, Credit.WITH_RECEIPT),
        (0x66, Credit.WITH_RECEIPT), (0x68, Credit.WITH_RECEIPT), (0x69, Credit.NEVER),
        (0x6A, Credit.NEVER), (0x78, Credit.NEVER), (0x99, Credit.NEVER),
    ],
)  # fmt: skip
def test_every_known_type_is_handled_on_purpose_and_unknown_ones_never_count(
    tx_type: int, credit: Credit
) -> None:
    assert credit_of(tx_type) is credit


def test_a_receipt_from_another_block_is_an_inconsistent_answer() -> None:
    data = fixture()
    receipts = {h: {**r, "blockHash": "0x" + "ab" * 32} for h, r in data["receipts"].items()}
    block = data["block"]
    number = int(block["number"], 16)
    found = find_deposits(
        [block], [], BlockRange(number, number), frozenset(), WatchedAddresses(data["watched"])
    )
    with pytest.raises(InconsistentAnswer):
        settle_natives(found.natives, receipts)
    with pytest.raises(InconsistentAnswer):
        settle_natives(found.natives, {})


@pytest.mark.parametrize("tx_type", [0x7E, 0x64, 0x65, 0x66, 0x68, 0x2])
async def test_the_poller_publishes_a_native_deposit_only_if_its_receipt_succeeded(
    tx_type: int,
) -> None:
    h = Harness(chain=FakeChain())
    failed = Transfer(W1, 100 * ETH, tx_type=tx_type, status=0)
    succeeded = Transfer(W2, 2 * ETH, tx_type=tx_type, status=1)
    h.chain.mine(failed, succeeded)
    h.chain.mine(count=2)
    await h.catch_up()
    assert deposits(h.published()) == [(W2, 2 * ETH)]


@pytest.mark.parametrize("tx_type", [0x69, 0x6A, 0x99])
async def test_the_poller_never_credits_value_of_types_that_do_not_pay_their_to(
    tx_type: int,
) -> None:
    h = Harness(chain=FakeChain())
    h.chain.mine(Transfer(W1, 100 * ETH, tx_type=tx_type, status=1))
    h.chain.mine(count=2)
    await h.catch_up()
    assert deposits(h.published()) == []


async def test_receipts_are_fetched_for_native_candidates_only_in_one_batch() -> None:
    h = Harness(chain=FakeChain())
    h.chain.mine(
        Transfer(W1, 1), Transfer(address(0xB0), 5), Transfer(W2, 5, token=USDC), Transfer(W2, 2)
    )
    h.chain.mine(Transfer(W2, 7, token=USDC), count=4)
    await h.catch_up()
    assert deposits(h.published()) == [(W1, 1), (W2, 5), (W2, 2), (W2, 7)]
    assert h.reader.receipt_calls == [[Transfer(W1, 1).tx_hash, Transfer(W2, 2).tx_hash]]
