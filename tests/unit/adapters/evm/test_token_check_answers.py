"""The token check decides "the configuration is wrong" only on a definite answer.

A node's error (a lagging backend's ``header not found``, a rate limit, a 5xx, a
dropped connection) says nothing about the contract: the check waits and asks again.
Only code absent at a block the node has, or a contract whose ``decimals()`` or
``symbol()`` answer differs (or reverts), refuses to start."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from eth_abi import encode

from intentd.adapters.evm.json_rpc import RpcTransportError
from intentd.adapters.evm.token_check import DECIMALS, SYMBOL, check_tokens
from intentd.backoff import Backoff
from intentd.settings import ConfigError, Settings

USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
FAST = Backoff(0.001, cap=0.005)


def settings() -> Settings:
    return Settings.model_validate(
        {
            "environment": "test",
            "database": {"url": "postgresql://127.0.0.1:1/x"},
            "kafka": {"bootstrap_servers": "127.0.0.1:1"},
            "hd_mnemonic": "test test test test test test test test test test test junk",
            "chains": {
                "BASE": {
                    "chain_id": 8453,
                    "network": "main",
                    "rpc_urls": ["https://rpc.example"],
                    "relayer": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
                    "tokens": [
                        {"address": USDC, "symbol": "USDC", "name": "USD Coin",
                         "decimals": 6, "category": "stablecoin"},
                    ],
                }
            },
        }
    )  # fmt: skip


class Node:
    """A JSON-RPC node: ``failures`` (an error object, an HTTP status or an exception,
    one per POST) come first; then it answers as a chain whose ``USDC`` has ``code``
    and ``decimals`` (a ``revert`` if None)."""

    def __init__(
        self, failures: list[Any], *, code: str = "0x6080", decimals: int | None = 6
    ) -> None:
        self.failures = failures
        self.code = code
        self.decimals = decimals
        self.posts = 0

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        self.posts += 1
        calls = orjson.loads(body)
        if self.failures:
            failure = self.failures.pop(0)
            if isinstance(failure, BaseException):
                raise failure
            if isinstance(failure, int):
                return failure, b"busy"
            return 200, orjson.dumps([{"id": c["id"], "error": failure} for c in calls])
        return 200, orjson.dumps([self._answer(c) for c in calls])

    def _answer(self, call: dict[str, Any]) -> dict[str, Any]:
        method, params = call["method"], call["params"]
        result: Any
        if method == "eth_chainId":
            result = hex(8453)
        elif method == "eth_blockNumber":
            result = hex(1000)
        elif method == "eth_getCode":
            result = self.code
        elif method == "eth_call" and self.code == "0x":
            result = "0x"
        elif method == "eth_call" and params[0]["data"] == DECIMALS:
            if self.decimals is None:
                return {"id": call["id"], "error": {"code": 3, "message": "execution reverted"}}
            result = "0x" + encode(["uint256"], [self.decimals]).hex()
        elif method == "eth_call" and params[0]["data"] == SYMBOL:
            result = "0x" + encode(["string"], ["USDC"]).hex()
        else:
            raise AssertionError(f"unexpected call {call}")
        return {"jsonrpc": "2.0", "id": call["id"], "result": result}

    async def close(self) -> None:
        pass


HEADER_NOT_FOUND = {"code": -32000, "message": "header not found"}
LIMIT = {"code": -32005, "message": "limit exceeded"}


@pytest.mark.parametrize(
    "failures",
    [
        [HEADER_NOT_FOUND] * 12,  # a backend behind the others, for a while
        [LIMIT, 429, 503, LIMIT] * 3,  # rate limits and errors of a provider
        [RpcTransportError("ClientOSError: connection reset")] * 5 + [HEADER_NOT_FOUND] * 5,
    ],
)
async def test_errors_of_the_node_are_waited_out_not_read_as_a_wrong_config(
    failures: list[Any],
) -> None:
    node = Node(list(failures))
    await asyncio.wait_for(check_tokens(settings(), ["BASE"], transport=node, retry=FAST), 10)
    assert not node.failures  # it asked until the node answered


async def test_no_code_at_the_address_is_a_wrong_config() -> None:
    with pytest.raises(ConfigError, match=r"chains\.BASE\.tokens\.0\.address = .*no contract"):
        await check_tokens(settings(), ["BASE"], transport=Node([], code="0x"), retry=FAST)


async def test_a_contract_whose_decimals_reverts_is_a_wrong_config() -> None:
    with pytest.raises(ConfigError, match=r"tokens\.0\.address = .*decimals\(\)"):
        await check_tokens(settings(), ["BASE"], transport=Node([], decimals=None), retry=FAST)


async def test_other_decimals_on_chain_are_a_wrong_config_even_after_errors() -> None:
    node = Node([HEADER_NOT_FOUND] * 3, decimals=18)
    with pytest.raises(ConfigError, match=r"tokens\.0\.decimals = 6: .* has 18 decimals"):
        await check_tokens(settings(), ["BASE"], transport=node, retry=FAST)


async def test_a_one_shot_check_gives_up_after_its_attempts_without_a_verdict() -> None:
    node = Node([HEADER_NOT_FOUND] * 1000)
    with pytest.raises(Exception, match="header not found") as raised:
        await check_tokens(settings(), ["BASE"], transport=node, retry=FAST, attempts=3)
    assert not isinstance(raised.value, ConfigError)


async def test_a_lagging_backend_is_not_read_as_no_contract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The executor of the fault run exited 2, "tokens differ from their contracts", on
    ``header not found`` from a backend a few blocks behind (called as the CLI does)."""
    monkeypatch.setattr("intentd.adapters.evm.token_check.RETRY", FAST, raising=False)
    node = Node([HEADER_NOT_FOUND] * 6)
    await asyncio.wait_for(check_tokens(settings(), ["BASE"], transport=node), 30)
    assert not node.failures
