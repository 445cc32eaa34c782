"""``EvmChainWriter.balances``: the relayer's and gas tank's balances in one POST, the
node's head first, each answer decoded (``eth_getBalance`` or ``balanceOf``) or refused."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from intentd.adapters.evm.chain_writer import EvmChainWriter
from intentd.adapters.evm.json_rpc import JsonRpcClient, MissingResult
from intentd.domain.actions import NATIVE

URL = "http://node.example"
RELAYER = "0x" + "3c" * 20
TANK = "0x" + "7a" * 20
USDC = "0x" + "ab" * 20


class Node:
    def __init__(self, word: str | None = None) -> None:
        self.posts: list[list[dict[str, Any]]] = []
        self.word = word

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        calls = orjson.loads(body)
        self.posts.append(calls)
        return 200, orjson.dumps(
            [{"jsonrpc": "2.0", "id": c["id"], **self._answer(c)} for c in calls]
        )

    def _answer(self, call: dict[str, Any]) -> dict[str, Any]:
        method, params = call["method"], call["params"]
        if method == "eth_chainId":
            return {"result": "0x1"}
        if method == "eth_blockNumber":
            return {"result": hex(1234)}
        if method == "eth_getBalance":
            return {"result": hex(7 * 10**18 if params[0] == RELAYER else 5 * 10**16)}
        assert method == "eth_call"
        return {"result": self.word or "0x" + f"{1_500_250_000:064x}"}


def writer(node: Node) -> EvmChainWriter:
    def rpc() -> JsonRpcClient:
        return JsonRpcClient("X", [URL], transport=node, backoff=0.001, attempts=1)

    return EvmChainWriter(rpc(), rpc())


async def test_the_balances_are_read_in_one_post_after_the_head() -> None:
    node = Node()
    found = await writer(node).balances([(RELAYER, NATIVE), (RELAYER, USDC), (TANK, NATIVE)])
    assert found.block == 1234
    assert found.amounts == {
        (RELAYER, NATIVE): 7 * 10**18, (RELAYER, USDC): 1_500_250_000, (TANK, NATIVE): 5 * 10**16,
    }  # fmt: skip
    [post] = [p for p in node.posts if p[0]["method"] != "eth_chainId"]
    assert [c["method"] for c in post] == [
        "eth_blockNumber", "eth_getBalance", "eth_call", "eth_getBalance",
    ]  # fmt: skip
    call = post[2]["params"]
    assert call[0] == {"to": USDC, "data": "0x70a08231" + "00" * 12 + RELAYER[2:]}
    assert call[1] == "latest" and post[1]["params"] == [RELAYER, "latest"]


@pytest.mark.parametrize("word", ["0x", "0x" + "1" * 65, "0xnothex"])
async def test_an_answer_that_is_not_one_word_is_no_balance(word: str) -> None:
    with pytest.raises(MissingResult, match="a balance answered"):
        await writer(Node(word)).balances([(RELAYER, USDC)])
