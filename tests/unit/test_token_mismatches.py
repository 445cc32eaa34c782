"""Configured tokens against their contracts' answers (pure comparison)."""

from __future__ import annotations

import pytest
from eth_abi import encode

from intentd.adapters.evm.token_check import (
    REVERTED,
    TokenAnswer,
    decode_symbol,
    decode_uint,
    token_mismatches,
)
from intentd.settings import ChainConfig

USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
USDT = "0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2"
CHAIN = ChainConfig.model_validate(
    {
        "name": "BASE",
        "chain_id": 8453,
        "network": "main",
        "rpc_urls": ["https://rpc.example"],
        "tokens": [
            {"address": USDC, "symbol": "USDC", "name": "USD Coin", "decimals": 6,
             "category": "stablecoin"},
            {"address": USDT, "symbol": "USDT", "name": "Tether USD", "decimals": 6,
             "category": "stablecoin"},
        ],
    }
)  # fmt: skip


def uint(value: int) -> str:
    return "0x" + encode(["uint256"], [value]).hex()


def string(value: str) -> str:
    return "0x" + encode(["string"], [value]).hex()


CODE = "0x6080604052"


def answer(decimals: object, symbol: object, code: str = CODE) -> TokenAnswer:
    return TokenAnswer(code, decimals, symbol)


def test_tokens_that_match_their_contracts_pass() -> None:
    answers = [answer(uint(6), string("USDC")), answer(uint(6), string("USDT"))]
    assert token_mismatches(CHAIN, answers) == []


def test_a_wrong_decimals_names_the_key_and_both_values() -> None:
    answers = [answer(uint(6), string("USDC")), answer(uint(18), string("USDT"))]
    [problem] = token_mismatches(CHAIN, answers)
    assert problem.startswith("chains.BASE.tokens.1.decimals = 6: ")
    assert "has 18 decimals" in problem


def test_a_wrong_symbol_and_a_missing_contract_are_named() -> None:
    problems = token_mismatches(CHAIN, [answer(uint(6), string("USDbC")), answer("0x", "0x", "0x")])
    assert problems == [
        f"chains.BASE.tokens.0.symbol = 'USDC': the contract at {USDC} says 'USDbC'",
        f"chains.BASE.tokens.1.address = {USDT}: no contract there",
    ]


def test_a_contract_that_reverts_decimals_is_not_a_token() -> None:
    [problem] = token_mismatches(CHAIN, [answer(REVERTED, REVERTED), answer(uint(6), "0x")])[:1]
    assert problem == (
        f"chains.BASE.tokens.0.address = {USDC}: no ERC-20 contract answers decimals() there"
    )


@pytest.mark.parametrize(
    ("answer", "symbol"),
    [
        (string("USDC"), "USDC"),
        ("0x" + b"MKR".ljust(32, b"\x00").hex(), "MKR"),  # old tokens return bytes32
        ("0x", None),
        (None, None),
        ("0x" + "00" * 31 + "40" + "00" * 32, None),  # offset past the end
    ],
)
def test_decode_symbol(answer: object, symbol: str | None) -> None:
    assert decode_symbol(answer) == symbol


def test_decode_uint() -> None:
    assert decode_uint(uint(18)) == 18
    assert decode_uint("0x") is None and decode_uint(None) is None
