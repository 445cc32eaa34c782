"""The JSON-RPC client and chain reader over a fake HTTP transport."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from prometheus_client import REGISTRY
from tests.unit.indexer.indexer_fakes import USDC, FakeChain, Transfer, address

from intentd.adapters.chain import EvmChainReader
from intentd.adapters.json_rpc import (
    JsonRpcClient,
    MissingResult,
    RangeLimitError,
    RpcError,
    RpcTransportError,
    is_range_limit,
)
from intentd.indexer.planning import BlockRange

LIVE = "http://live.example"
DEAD = "http://dead.example"

Fault = Callable[[str, dict[str, Any]], dict[str, Any] | None]


class FakeProvider:
    """A JSON-RPC node over a :class:`FakeChain`, with the faults a test arms."""

    def __init__(self, chain: FakeChain, *, log_limit: int | None = None) -> None:
        self.chain = chain
        self.log_limit = log_limit
        self.dead: set[str] = set()
        self.posts: list[tuple[str, list[dict[str, Any]]]] = []
        self.faults: list[Fault] = []  # each may answer one call in place of the node
        self.shuffle = False

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        calls = orjson.loads(body)
        self.posts.append((url, calls))
        if url in self.dead:
            raise RpcTransportError("connection refused")
        answers = [self._answer(url, call) for call in calls]
        if self.shuffle:
            random.Random(len(self.posts)).shuffle(answers)
        return 200, orjson.dumps(answers)

    async def close(self) -> None:
        pass

    def _answer(self, url: str, call: dict[str, Any]) -> dict[str, Any]:
        for fault in list(self.faults):
            answer = fault(url, call)
            if answer is not None:
                self.faults.remove(fault)
                return {"jsonrpc": "2.0", "id": call["id"], **answer}
        return {"jsonrpc": "2.0", "id": call["id"], **self._node(call["method"], call["params"])}

    def _node(self, method: str, params: list[Any]) -> dict[str, Any]:
        if method == "eth_blockNumber":
            return {"result": hex(self.chain.head)}
        if method == "eth_getBlockByNumber":
            n = int(params[0], 16)
            return {"result": self.chain.blocks[n] if n <= self.chain.head else None}
        if method == "eth_getLogs":
            query = params[0]
            first, last = int(query["fromBlock"], 16), int(query["toBlock"], 16)
            if self.log_limit is not None and last - first + 1 > self.log_limit:
                return {
                    "error": {"code": -32005, "message": "query returned more than 10000 results"}
                }
            return {"result": self.chain.logs(first, last, query["address"])}
        return {"error": {"code": -32601, "message": f"method {method} not found"}}


def error_once(method: str, code: int = -32000, message: str = "header not found") -> Fault:
    def fault(url: str, call: dict[str, Any]) -> dict[str, Any] | None:
        return {"error": {"code": code, "message": message}} if call["method"] == method else None

    return fault


def client(
    provider: FakeProvider, chain: str, urls: list[str] | None = None, **kw: Any
) -> JsonRpcClient:
    options: dict[str, Any] = {"backoff": 0.001, "backoff_max": 0.002, "attempts": 4}
    options.update(kw)
    return JsonRpcClient(chain, urls or [LIVE], transport=provider, **options)


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def busy_chain() -> FakeChain:
    chain = FakeChain()
    for n in range(1, 41):
        chain.mine(Transfer(address(n), n, token=USDC), Transfer(address(n), n))
    return chain


async def test_batch_results_come_back_in_call_order() -> None:
    provider = FakeProvider(busy_chain())
    provider.shuffle = True
    rpc = client(provider, "RPC_ORDER", max_calls=7)
    blocks = await rpc.batch([("eth_getBlockByNumber", [hex(n), True]) for n in range(30)])
    assert [int(b["number"], 16) for b in blocks] == list(range(30))
    assert len(provider.posts) == 5  # 30 calls, at most 7 per POST


async def test_calls_asked_together_go_in_one_post_and_are_retried_whole() -> None:
    provider = FakeProvider(busy_chain())
    provider.faults.append(error_once("eth_getBlockByNumber"))
    rpc = client(provider, "RPC_TOGETHER", max_calls=7)
    calls = [("eth_blockNumber", [])] + [
        ("eth_getBlockByNumber", [hex(n), False]) for n in range(6)
    ]
    head, *blocks = await rpc.together(calls)
    assert head == hex(40) and [int(b["number"], 16) for b in blocks] == list(range(6))
    assert [len(body) for _, body in provider.posts] == [7, 7]  # one POST each time
    with pytest.raises(ValueError, match="one POST"):
        await rpc.together([*calls, ("eth_blockNumber", [])])


async def test_an_error_in_one_element_fails_the_batch_which_is_retried() -> None:
    provider = FakeProvider(busy_chain())
    provider.faults.append(error_once("eth_getBlockByNumber"))
    rpc = client(provider, "RPC_RETRY")
    blocks = await rpc.batch([("eth_getBlockByNumber", [hex(n), True]) for n in range(5)])
    assert len(blocks) == 5
    assert len(provider.posts) == 2
    labels = {"chain": "RPC_RETRY", "method": "eth_getBlockByNumber"}
    assert counter("intentd_rpc_errors_total", **labels) == 1


async def test_a_dead_url_fails_over_to_the_next_one() -> None:
    provider = FakeProvider(busy_chain())
    provider.dead.add(DEAD)
    rpc = client(provider, "RPC_FAILOVER", urls=[DEAD, LIVE])
    assert await rpc.call("eth_blockNumber", []) == hex(40)
    assert rpc.url == LIVE
    assert await rpc.call("eth_blockNumber", []) == hex(40)
    assert [url for url, _ in provider.posts] == [DEAD, LIVE, LIVE]
    assert counter("intentd_rpc_failovers_total", chain="RPC_FAILOVER") == 1


async def test_the_last_error_is_raised_after_the_attempts() -> None:
    provider = FakeProvider(busy_chain())
    provider.dead.update({DEAD, LIVE})
    rpc = client(provider, "RPC_DOWN", urls=[DEAD, LIVE], attempts=3)
    with pytest.raises(RpcTransportError, match="refused"):
        await rpc.call("eth_blockNumber", [])
    assert [url for url, _ in provider.posts] == [DEAD, LIVE, DEAD]


async def test_a_null_block_is_retried_not_skipped() -> None:
    provider = FakeProvider(busy_chain())

    def lagging(url: str, call: dict[str, Any]) -> dict[str, Any] | None:
        return {"result": None} if call["method"] == "eth_getBlockByNumber" else None

    provider.faults.append(lagging)
    rpc = client(provider, "RPC_NULL")
    blocks = await rpc.batch([("eth_getBlockByNumber", [hex(3), True])])
    assert blocks[0]["number"] == hex(3)
    provider.faults.extend([lagging] * 4)
    with pytest.raises(MissingResult):
        await rpc.batch([("eth_getBlockByNumber", [hex(3), True])])


async def test_malformed_answers_are_transport_errors() -> None:
    class Broken(FakeProvider):
        async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
            self.posts.append((url, []))
            return 502, b"<html>bad gateway</html>"

    provider = Broken(busy_chain())
    with pytest.raises(RpcTransportError, match="502"):
        await client(provider, "RPC_BROKEN", attempts=2).call("eth_blockNumber", [])
    assert len(provider.posts) == 2


async def test_a_refused_batch_is_an_rpc_error() -> None:
    class Refusing(FakeProvider):
        async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
            error = {"code": -32600, "message": "batch too large"}
            return 200, orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error})

    with pytest.raises(RpcError, match="batch too large"):
        await client(Refusing(busy_chain()), "RPC_REFUSED", attempts=1).call("eth_blockNumber", [])


async def test_logs_are_split_on_a_provider_limit_and_the_width_is_remembered() -> None:
    chain = busy_chain()
    provider = FakeProvider(chain, log_limit=10)
    reader = EvmChainReader(client(provider, "RPC_SPLIT"), [USDC], max_log_range=2000)
    raw = await reader.read_range(BlockRange(1, 40))
    assert [int(log["blockNumber"], 16) for log in raw.logs] == list(range(1, 41))
    assert len(raw.blocks) == 40
    assert reader.log_ranges.width <= 10
    log_posts = [calls for _, calls in provider.posts if calls[0]["method"] == "eth_getLogs"]
    refused = len(log_posts)
    assert refused > 4  # 40 -> 20 -> 10: some refusals, then answers
    provider.posts.clear()
    raw = await reader.read_range(BlockRange(1, 40))
    assert len(raw.logs) == 40
    log_posts = [calls for _, calls in provider.posts if calls[0]["method"] == "eth_getLogs"]
    assert len(log_posts) == 4  # 4 x 10 blocks: no refusal the second time


async def test_the_width_grows_back_once_the_provider_answers_wider_ranges() -> None:
    provider = FakeProvider(busy_chain(), log_limit=5)
    reader = EvmChainReader(client(provider, "RPC_GROW"), [USDC], max_log_range=40)
    await reader.read_range(BlockRange(1, 40))
    narrow = reader.log_ranges.width
    provider.log_limit = None
    for _ in range(30):
        await reader.read_range(BlockRange(1, 40))
    assert reader.log_ranges.width > narrow


async def test_a_one_block_refusal_is_raised() -> None:
    provider = FakeProvider(busy_chain(), log_limit=0)
    reader = EvmChainReader(client(provider, "RPC_ONE"), [USDC], max_log_range=4)
    with pytest.raises(RangeLimitError):
        await reader.read_range(BlockRange(1, 4))


async def test_block_hashes_are_none_above_the_head() -> None:
    chain = busy_chain()
    reader = EvmChainReader(client(FakeProvider(chain), "RPC_HASHES"), [], max_log_range=10)
    hashes = await reader.block_hashes([39, 40, 41])
    assert hashes == {39: chain.blocks[39]["hash"], 40: chain.blocks[40]["hash"], 41: None}
    assert await reader.latest_block() == 40
    assert (await reader.read_range(BlockRange(40, 40))).logs == []  # no tokens: no log query


@pytest.mark.parametrize(
    ("code", "message", "limit"),
    [
        (-32005, "query returned more than 10000 results", True),
        (
            -32602,
            "Log response size exceeded. You can make eth_getLogs requests with up to a 2K "
            "block range",
            True,
        ),
        (-32000, "block range is too wide", True),
        (-32000, "exceed maximum block range: 5000", True),
        (-32600, "eth_getLogs is limited to a 10,000 range", False),
        (-32000, "header not found", False),
        (-32603, "internal error", False),
    ],
)
def test_range_limit_errors_are_recognised(code: int, message: str, limit: bool) -> None:
    assert is_range_limit(code, message) is limit
