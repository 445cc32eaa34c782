"""The executor's code checks and gas estimates are pinned to the highest head seen:
a node below it (a lagging backend of a load balancer, a stale failover URL) does not
decide "no code" or "the estimate reverts" from old state; it is asked again (issue 19,
executor lag, finding 2)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from intentd.adapters.evm.chain_writer import EvmChainWriter
from intentd.adapters.evm.json_rpc import JsonRpcClient, MissingResult
from intentd.execution.ports import EstimateReverted

URL = "http://node.example"
TOKEN = "0x" + "cc" * 20
RELAYER = "0x" + "aa" * 20
ARRIVES = 5
"""The block in which the token's code (and the relayer's tokens) appear."""
HEADER_NOT_FOUND = {"code": -32000, "message": "header not found"}


class Node:
    """A chain at ``height``; each POST may land on a node ``lag`` blocks behind (the
    next of :attr:`lags`, else 0), which answers a state read above its head with
    "header not found" and ``latest`` at its own head."""

    def __init__(self, height: int) -> None:
        self.height = height
        self.arrives = ARRIVES
        self.lags: list[int] = []
        self.posts: list[list[Any]] = []

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        calls = orjson.loads(body)
        top = self.height - (self.lags.pop(0) if self.lags else 0)
        self.posts.append([(c["method"], c["params"]) for c in calls])
        return 200, orjson.dumps(
            [{"jsonrpc": "2.0", "id": c["id"], **self._answer(c, top)} for c in calls]
        )

    def _answer(self, call: dict[str, Any], top: int) -> dict[str, Any]:
        method, params = call["method"], call["params"]
        if method == "eth_blockNumber":
            return {"result": hex(top)}
        tag = params[1] if len(params) > 1 else "latest"
        block = top if tag in ("latest", "pending") else int(tag, 16)
        if block > top:
            return {"error": HEADER_NOT_FOUND}
        if method == "eth_getCode":
            return {"result": "0x6080" if block >= self.arrives else "0x"}
        if method == "eth_estimateGas":
            if block < self.arrives:
                return {"error": {"code": 3, "message": "execution reverted: balance"}}
            return {"result": hex(40_000)}
        raise AssertionError(method)

    async def close(self) -> None:
        pass


def writer(node: Node) -> EvmChainWriter:
    def rpc(attempts: int) -> JsonRpcClient:
        return JsonRpcClient(
            "X", [URL], transport=node, backoff=0.001, backoff_max=0.002, attempts=attempts
        )

    return EvmChainWriter(rpc(3), rpc(1))


async def test_a_lagging_node_does_not_say_no_code_at_the_token() -> None:
    node = Node(10)
    w = writer(node)
    assert await w.head() == 10  # the head seen
    node.lags = [7, 7]  # the next POSTs land on a node at block 3, before the token's code
    assert await w.has_code(TOKEN) is True
    assert all(params[-1] == hex(10) for post in node.posts[1:] for m, params in post
               if m == "eth_getCode")  # fmt: skip


async def test_a_lagging_node_does_not_make_an_estimate_revert_at_old_state() -> None:
    node = Node(10)
    w = writer(node)
    assert await w.head() == 10
    node.lags = [7]  # the estimate lands on a node at block 3: the relayer had no tokens
    assert await w.estimate_gas(RELAYER, TOKEN, 0, b"\xa9\x05\x9c\xbb") == 40_000


async def test_an_estimate_that_reverts_at_the_head_seen_still_reverts() -> None:
    node = Node(10)
    w = writer(node)
    await w.head()
    node.arrives = 11  # the relayer has no tokens at the head seen
    with pytest.raises(EstimateReverted):
        await w.estimate_gas(RELAYER, TOKEN, 0, b"")


async def test_nodes_that_stay_below_the_head_seen_answer_nothing() -> None:
    node = Node(10)
    w = writer(node)
    await w.head()
    node.lags = [7] * 20
    with pytest.raises(MissingResult):
        await w.has_code(TOKEN)
