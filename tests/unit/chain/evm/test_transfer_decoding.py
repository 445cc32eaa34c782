"""Decoding of recorded anvil answers (tests/fixtures/rpc, see record.py there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eth_utils import keccak
from hypothesis import given
from hypothesis import strategies as st

from intentd.chain.blocks import BlockRange
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.decoding import NATIVE, TRANSFER_TOPIC, decode_headers, find_deposits
from intentd.chain.transfers import ChainTransfer, chain_order
from intentd.indexer.publishing import deposit_message, deposit_payload
from intentd.messages import decode_chain_message, encode
from intentd.settings import NATIVE_TOKEN

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "rpc"


def load(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@pytest.fixture
def scenario() -> dict[str, Any]:
    loaded: dict[str, Any] = load("scenario")
    return loaded


def decode(scenario: dict[str, Any], blocks: Any = None, logs: Any = None) -> Any:
    """(headers, token deposits and native candidates in chain order): the recorded
    native transfers are ordinary ones that succeeded (receipts: test_native_receipts)."""
    first, last = scenario["range"]
    found = find_deposits(
        load("blocks") if blocks is None else blocks,
        load("logs") if logs is None else logs,
        BlockRange(first, last),
        frozenset(scenario["tokens"]),
        WatchedAddresses(scenario["watched"]),
    )
    everything = found.deposits + [candidate.deposit for candidate in found.natives]
    return found.headers, sorted(everything, key=chain_order)


def test_transfer_topic_is_the_erc20_event_signature() -> None:
    assert "0x" + keccak(text="Transfer(address,address,uint256)").hex() == TRANSFER_TOPIC
    assert NATIVE_TOKEN.lower() == NATIVE


def test_recorded_range_decodes_to_the_expected_deposits(scenario: dict[str, Any]) -> None:
    headers, deposits = decode(scenario)
    assert [d._asdict() for d in deposits] == scenario["expected"]
    blocks = load("blocks")
    assert [(h.number, h.hash, h.parent_hash) for h in headers] == [
        (int(b["number"], 16), b["hash"], b["parentHash"]) for b in blocks
    ]
    assert headers[1].parent_hash == headers[0].hash


def test_unconfigured_token_zero_amounts_and_unwatched_are_ignored(
    scenario: dict[str, Any],
) -> None:
    _, deposits = decode(scenario)
    assert scenario["unconfigured_token"] not in {d.token for d in deposits}
    assert all(d.amount > 0 for d in deposits)
    assert {d.to_address for d in deposits} <= set(scenario["watched"])


def test_nothing_is_found_when_nothing_is_watched(scenario: dict[str, Any]) -> None:
    _, deposits = decode({**scenario, "watched": []})
    assert deposits == []


def test_the_unconfigured_token_counts_once_configured(scenario: dict[str, Any]) -> None:
    tokens = [*scenario["tokens"], scenario["unconfigured_token"]]
    _, deposits = decode({**scenario, "tokens": tokens})
    fake = [d for d in deposits if d.token == scenario["unconfigured_token"]]
    assert [(d.to_address, d.amount) for d in fake] == [(scenario["watched"][0], 9_000_000)]


def test_a_log_from_another_fork_is_an_inconsistent_answer(scenario: dict[str, Any]) -> None:
    logs = load("logs")
    logs[1]["blockHash"] = "0x" + "ab" * 32
    with pytest.raises(InconsistentAnswer, match="another fork"):
        decode(scenario, logs=logs)


def test_a_removed_log_is_an_inconsistent_answer(scenario: dict[str, Any]) -> None:
    logs = load("logs")
    logs[0]["removed"] = True
    with pytest.raises(InconsistentAnswer):
        decode(scenario, logs=logs)


def test_a_log_outside_the_range_is_an_inconsistent_answer(scenario: dict[str, Any]) -> None:
    blocks = load("blocks")
    first, last = scenario["range"]
    with pytest.raises(InconsistentAnswer, match="outside"):
        find_deposits(
            blocks[1:],
            load("logs"),
            BlockRange(first + 1, last),
            frozenset(scenario["tokens"]),
            WatchedAddresses(scenario["watched"]),
        )


@pytest.mark.parametrize(
    ("numbers", "blocks_range", "message"),
    [
        ([4], BlockRange(4, 5), "got 1 blocks"),
        ([4, 6], BlockRange(4, 5), "asked for block 5, got block 6"),
        ([5, 4], BlockRange(4, 5), "asked for block 4, got block 5"),
    ],
)
def test_missing_or_misplaced_blocks_are_refused(
    numbers: list[int], blocks_range: BlockRange, message: str
) -> None:
    template = load("blocks")[1]
    blocks = [{**template, "number": hex(n)} for n in numbers]
    with pytest.raises(InconsistentAnswer, match=message):
        decode_headers(blocks, blocks_range)


def test_blocks_without_full_transactions_are_refused(scenario: dict[str, Any]) -> None:
    blocks = load("blocks")
    blocks[0]["transactions"] = [tx["hash"] for tx in blocks[0]["transactions"]]
    with pytest.raises(InconsistentAnswer, match="full transactions"):
        decode(scenario, blocks=blocks)


def test_an_erc721_transfer_of_a_configured_contract_is_not_a_deposit(
    scenario: dict[str, Any],
) -> None:
    logs = load("logs")
    erc721 = dict(logs[1])
    erc721["topics"] = [*erc721["topics"], "0x" + "0" * 63 + "7"]
    erc721["data"] = "0x"
    _, deposits = decode(scenario, logs=[erc721])
    assert [d for d in deposits if d.token != NATIVE] == []


@given(
    chain=st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True),
    chain_id=st.integers(1, 2**63),
    number=st.integers(0, 2**40),
    log_index=st.integers(-1, 2**20),
    transfer_index=st.integers(-1, 2**20),
    amount=st.integers(1, 2**256 - 1),
    observed=st.integers(0, 2**50),
    hashes=st.lists(st.binary(min_size=32, max_size=32), min_size=2, max_size=2),
    addresses=st.lists(st.binary(min_size=20, max_size=20), min_size=3, max_size=3),
)
def test_the_fast_payload_is_the_encoded_message(
    *,
    chain: str, chain_id: int, number: int, log_index: int, transfer_index: int, amount: int,
    observed: int, hashes: list[bytes], addresses: list[bytes],
) -> None:  # fmt: skip
    block_hash, tx_hash = ("0x" + h.hex() for h in hashes)
    token, sender, to = ("0x" + a.hex() for a in addresses)
    deposit = ChainTransfer(
        number, block_hash, number * 2, tx_hash, 0, log_index, token, sender, to, amount,
        transfer_index,
    )  # fmt: skip
    payload = deposit_payload(chain, chain_id, deposit, observed)
    assert payload == encode(deposit_message(chain, chain_id, deposit, observed))
    assert decode_chain_message(payload) == deposit_message(chain, chain_id, deposit, observed)


def test_recorded_deposits_encode_the_same_both_ways(scenario: dict[str, Any]) -> None:
    _, deposits = decode(scenario)
    for deposit in deposits:
        fast = deposit_payload("BASE_TESTNET", 84532, deposit, 1)
        assert fast == encode(deposit_message("BASE_TESTNET", 84532, deposit, 1))


def transfer_log(tx: str, index: int, token: str, to: str, header: dict[str, Any]) -> Any:
    return {
        "address": token, "blockNumber": header["number"], "blockHash": header["hash"],
        "transactionHash": tx, "transactionIndex": "0x0", "logIndex": hex(index),
        "topics": [TRANSFER_TOPIC, "0x" + "0" * 64, "0x" + "0" * 24 + to[2:]],
        "data": f"0x{index + 1:064x}", "removed": False,
    }  # fmt: skip


def test_a_transfer_is_identified_by_its_position_among_its_tokens_logs_in_the_transaction(
    scenario: dict[str, Any],
) -> None:
    block = load("blocks")[0]
    token, other = scenario["tokens"][0], scenario["unconfigured_token"]
    watched, unwatched = scenario["watched"][0], "0x" + "3" * 40
    tx = "0x" + "cd" * 32
    # logs 7..11 of the block: the position counts every Transfer log of the same
    # contract in the transaction, whoever receives it, and no other contract's
    logs = [
        transfer_log(tx, 7, token, unwatched, block),
        transfer_log(tx, 8, other, watched, block),
        transfer_log(tx, 9, token, watched, block),
        transfer_log(tx, 10, token, watched, block),
    ]
    first = int(block["number"], 16)
    found = find_deposits(
        [block], logs, BlockRange(first, first), frozenset([token, other]),
        WatchedAddresses([watched]),
    )  # fmt: skip
    assert [(d.token, d.log_index, d.transfer_index) for d in found.deposits] == [
        (other, 8, 0), (token, 9, 1), (token, 10, 2),
    ]  # fmt: skip
    shifted = [{**log, "logIndex": hex(int(log["logIndex"], 16) + 30)} for log in logs]
    again = find_deposits(
        [block], shifted, BlockRange(first, first), frozenset([token, other]),
        WatchedAddresses([watched]),
    )  # fmt: skip
    assert [d.key for d in again.deposits] == [d.key for d in found.deposits]


def test_logs_of_a_transaction_out_of_order_are_an_inconsistent_answer(
    scenario: dict[str, Any],
) -> None:
    block = load("blocks")[0]
    token, watched = scenario["tokens"][0], scenario["watched"][0]
    tx = "0x" + "cd" * 32
    logs = [transfer_log(tx, 4, token, watched, block), transfer_log(tx, 2, token, watched, block)]
    first = int(block["number"], 16)
    with pytest.raises(InconsistentAnswer, match="log order"):
        find_deposits(
            [block], logs, BlockRange(first, first), frozenset([token]),
            WatchedAddresses([watched]),
        )  # fmt: skip
