"""Second-provider confirmation of a prefill's deposits: decisions on fakes, and config."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.adapters.evm.second_provider import RpcSecondProvider
from intentd.domain.actions import NATIVE
from intentd.execution.deposit_check import (
    TRANSFER_TOPIC,
    Credited,
    check_receipt,
    needs_check,
    retry_delay,
)
from intentd.execution.deposit_verifier import DepositVerifier, confirm
from intentd.settings import ChainConfig, ConfigError, load_settings

TOKEN = "0x" + "aa" * 20
INTENT = "0x" + "11" * 20
PAYER = "0x" + "22" * 20
BLOCK = "0x" + "b0" * 32
OTHER_BLOCK = "0x" + "b1" * 32
PARENT = "0x" + "af" * 32
TX = "0x" + "cc" * 32
CHAIN = ChainConfig(name="SRC", chain_id=1, network="test", rpc_urls=["http://a"], confirmations=3)

TOKEN_DEPOSIT = Credited(TX, TOKEN, 1, INTENT, 500, 100, BLOCK)
NATIVE_DEPOSIT = Credited(TX, NATIVE, -1, INTENT, 10**18, 100, BLOCK)


def transfer(token: str, to: str, amount: int) -> dict[str, Any]:
    topics = [TRANSFER_TOPIC, "0x" + "00" * 12 + PAYER[2:], "0x" + "00" * 12 + to[2:]]
    return {"address": token, "topics": topics, "data": hex(amount)}


def receipt(*logs: dict[str, Any], status: str = "0x1", block: str = BLOCK) -> dict[str, Any]:
    return {"blockHash": block, "status": status, "logs": list(logs)}


OTHER_TOKEN = "0x" + "ab" * 20
GOOD_RECEIPT = receipt(
    transfer(TOKEN, PAYER, 7), transfer(OTHER_TOKEN, INTENT, 500), transfer(TOKEN, INTENT, 500)
)


class FakeProvider:
    """A second provider that knows what the test gives it: blocks by height (a block
    with ``txs`` in full), receipts and balances."""

    def __init__(self, *, head: int = 200, blocks: dict[int, str] | None = None) -> None:
        self.head_number = head
        self.blocks = {100: BLOCK} if blocks is None else blocks
        self.receipts_by_hash: dict[str, dict[str, Any]] = {}
        self.txs: dict[str, dict[str, Any]] = {}
        self.balances_at: dict[tuple[str, str], int] = {}
        self.tags: list[str] = []

    async def view(self, tag: str, number: int, *, full: bool) -> tuple[int, dict[str, Any] | None]:
        self.tags.append(tag)
        found = self.blocks.get(number)
        if found is None:
            return self.head_number, None
        txs = list(self.txs.values()) if full else list(self.txs)
        parent = PARENT if found == BLOCK else "0x" + "ae" * 32
        return self.head_number, {
            "number": hex(number), "hash": found, "parentHash": parent, "transactions": txs,
        }  # fmt: skip

    async def receipts(self, tx_hashes: Sequence[str]) -> list[dict[str, Any] | None]:
        return [self.receipts_by_hash.get(h) for h in tx_hashes]

    async def balances(self, address: str, block_hashes: Sequence[str]) -> list[int]:
        return [self.balances_at.get((address, h), 0) for h in block_hashes]

    async def close(self) -> None:
        pass


# --- the threshold ---------------------------------------------------------------------


@given(st.lists(st.integers(1, 10**30), max_size=5), st.integers(0, 10**30))
def test_deposits_are_checked_exactly_when_their_sum_is_above_the_threshold(
    amounts: list[int], threshold: int
) -> None:
    deposits = [replace(TOKEN_DEPOSIT, amount=a) for a in amounts]
    assert needs_check(deposits, threshold) is (sum(amounts) > threshold)
    assert needs_check(deposits, None) is False


@given(st.floats(0, 10**7, allow_nan=False))
def test_retry_delay_grows_and_is_bounded(waited: float) -> None:
    delay = retry_delay(waited)
    assert 5.0 <= delay <= 120.0
    assert retry_delay(waited * 2 + 1) >= delay


# --- receipts --------------------------------------------------------------------------


def test_the_token_transfer_at_the_deposits_position_confirms_it() -> None:
    assert check_receipt(TOKEN_DEPOSIT, GOOD_RECEIPT, None) is None


@pytest.mark.parametrize(
    ("found", "reason"),
    [
        (None, "no receipt"),
        (receipt(*GOOD_RECEIPT["logs"], status="0x0"), "transaction failed"),
        (receipt(*GOOD_RECEIPT["logs"], block=OTHER_BLOCK), "receipt in block"),
        (receipt(transfer(TOKEN, PAYER, 7)), "no Transfer log #1"),
        (receipt(transfer(TOKEN, PAYER, 7), transfer(TOKEN, INTENT, 499)), "pays 499"),
        (receipt(transfer(TOKEN, PAYER, 7), transfer(TOKEN, PAYER, 500)), "pays 500 to 0x2222"),
        (receipt(transfer(TOKEN, INTENT, 500), transfer(TOKEN, PAYER, 7)), "pays 7"),
    ],
)
def test_a_receipt_that_differs_does_not_confirm_a_token_deposit(
    found: dict[str, Any] | None, reason: str
) -> None:
    assert reason in (check_receipt(TOKEN_DEPOSIT, found, None) or "confirmed")


def test_a_native_deposit_needs_the_same_value_to_the_intent() -> None:
    tx = {"to": INTENT, "value": hex(10**18)}
    assert check_receipt(NATIVE_DEPOSIT, receipt(), tx) is None
    assert check_receipt(NATIVE_DEPOSIT, receipt(), None) == "no transaction"
    assert "sends" in (check_receipt(NATIVE_DEPOSIT, receipt(), tx | {"value": "0x1"}) or "")
    assert "sends" in (check_receipt(NATIVE_DEPOSIT, receipt(), tx | {"to": PAYER}) or "")
    assert check_receipt(NATIVE_DEPOSIT, receipt(status="0x0"), tx) == "transaction failed"


# --- the whole check on a fake provider ------------------------------------------------


async def test_a_provider_that_agrees_confirms_and_reads_the_chains_head() -> None:
    provider = FakeProvider()
    provider.receipts_by_hash[TX] = GOOD_RECEIPT
    chain = CHAIN.model_copy(update={"head": "safe"})
    assert await confirm([TOKEN_DEPOSIT], provider, chain) == []
    assert provider.tags == ["safe"]


async def test_a_provider_without_the_transaction_does_not_confirm() -> None:
    [reason] = await confirm([TOKEN_DEPOSIT], FakeProvider(), CHAIN)
    assert reason == f"{TX}: no receipt"


async def test_a_block_of_another_fork_or_not_deep_enough_does_not_confirm() -> None:
    provider = FakeProvider(blocks={100: OTHER_BLOCK})
    provider.receipts_by_hash[TX] = GOOD_RECEIPT
    [reason] = await confirm([TOKEN_DEPOSIT], provider, CHAIN)
    assert "block 100 is 0xb1" in reason
    shallow = FakeProvider(head=101)
    shallow.receipts_by_hash[TX] = GOOD_RECEIPT
    [reason] = await confirm([TOKEN_DEPOSIT], shallow, CHAIN)
    assert "not 3 deep at 101" in reason
    deep = FakeProvider(head=102)
    deep.receipts_by_hash[TX] = GOOD_RECEIPT
    assert await confirm([TOKEN_DEPOSIT], deep, CHAIN) == []


async def test_every_deposit_is_confirmed_not_only_the_first() -> None:
    provider = FakeProvider()
    provider.receipts_by_hash[TX] = GOOD_RECEIPT
    second = replace(TOKEN_DEPOSIT, tx_hash="0x" + "dd" * 32)
    [reason] = await confirm([TOKEN_DEPOSIT, second], provider, CHAIN)
    assert reason.startswith(second.tx_hash)


# --- configuration ---------------------------------------------------------------------

CONFIG = """
[database]
url = "postgresql://u@db/x"
[kafka]
bootstrap_servers = "k:9092"
[chains.BASE]
chain_id = 8453
network = "main"
rpc_urls = ["https://rpc.example/key1"]
{extra}
[[chains.BASE.tokens]]
address = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"
symbol = "USDC"
name = "USD Coin"
decimals = 6
category = "stablecoin"
verify_above = "1000.5"
"""


def test_a_threshold_without_a_second_provider_refuses_to_start(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(extra=""))
    with pytest.raises(ConfigError, match=r"chains\.BASE\.verify_rpc_urls is empty but USDC"):
        load_settings(path, {})


def test_the_second_provider_must_be_another_url(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(extra='verify_rpc_urls = ["https://rpc.example/key1"]'))
    with pytest.raises(ConfigError, match=r"verify_rpc_urls repeats an rpc_urls entry") as raised:
        load_settings(path, {})
    assert "key1" not in str(raised.value)


def test_a_threshold_with_a_second_provider_is_read_in_base_units(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(extra='verify_rpc_urls = ["https://other.example/key2"]'))
    chain = load_settings(path, {}).chains["BASE"]
    assert chain.tokens[0].verify_above_units == 1_000_500_000
    assert chain.native.verify_above_units is None
    assert "key2" not in repr(chain)


def test_without_any_threshold_there_is_no_verifier(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(extra="").replace('verify_above = "1000.5"\n', ""))
    assert DepositVerifier.from_settings(load_settings(path, {}), RpcSecondProvider) is None
    path.write_text(CONFIG.format(extra='verify_rpc_urls = ["https://other.example/key2"]'))
    assert DepositVerifier.from_settings(load_settings(path, {}), RpcSecondProvider) is not None
