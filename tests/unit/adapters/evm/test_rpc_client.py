"""The JSON-RPC client and chain reader over a fake HTTP transport."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from tests.unit.adapters.evm.rpc_fakes import LIVE, FakeProvider, Node, client, counter, error_once
from tests.unit.chain.chain_fakes import USDC, FakeChain, Transfer, address

from intentd.adapters.evm.chain_reader import EvmChainReader
from intentd.adapters.evm.json_rpc import MissingResult, RpcError, RpcTransportError, is_range_limit
from intentd.adapters.evm.window_logs import IntentWindowReader
from intentd.chain.blocks import BlockRange

DEAD = "http://dead.example"


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


def log_posts(provider: FakeProvider) -> list[list[dict[str, Any]]]:
    return [calls for _, calls in provider.posts if "eth_getLogs" in {c["method"] for c in calls}]


async def test_logs_are_split_on_a_provider_limit_and_the_width_is_remembered() -> None:
    chain = busy_chain()
    provider = FakeProvider(chain, log_limit=10)
    reader = EvmChainReader(client(provider, "RPC_SPLIT"), [USDC], max_log_range=2000)
    raw = await reader.read_range(BlockRange(1, 40))
    assert [int(log["blockNumber"], 16) for log in raw.logs] == list(range(1, 41))
    assert len(raw.blocks) == 40
    assert reader.log_ranges.width <= 10
    assert len(log_posts(provider)) == 3  # 1 x 40 and 2 x 20 refused, 4 x 10 in one POST
    provider.posts.clear()
    raw = await reader.read_range(BlockRange(1, 40))
    assert len(raw.logs) == 40
    assert len(log_posts(provider)) == 1  # 4 x 10 blocks in one POST: no refusal this time
    [calls] = log_posts(provider)
    anchor = ("eth_getBlockByNumber", [hex(40), False])
    assert [(c["method"], c["params"]) for c in calls[:: len(calls) - 1]] == [anchor, anchor]
    assert all(a.anchor_hashes == (chain.blocks[40]["hash"],) * 2 for a in raw.answers)


async def test_the_width_grows_back_once_the_provider_answers_wider_ranges() -> None:
    provider = FakeProvider(busy_chain(), log_limit=5)
    reader = EvmChainReader(client(provider, "RPC_GROW"), [USDC], max_log_range=40)
    await reader.read_range(BlockRange(1, 40))
    narrow = reader.log_ranges.width
    provider.log_limit = None
    for _ in range(30):
        await reader.read_range(BlockRange(1, 40))
    assert reader.log_ranges.width > narrow


async def test_a_one_block_refusal_is_read_from_the_blocks_receipts() -> None:
    chain = busy_chain()
    provider = FakeProvider(chain, log_limit=0)
    reader = EvmChainReader(client(provider, "RPC_ONE"), [USDC], max_log_range=4)
    raw = await reader.read_range(BlockRange(1, 4))
    assert raw.logs == chain.logs(1, 4, [USDC])
    assert [str(a.blocks) for a in raw.answers] == ["1..1", "2..2", "3..3", "4..4"]
    assert len(provider.calls("eth_getBlockReceipts")) == 4
    assert counter("intentd_rpc_log_refusals_total", chain="RPC_ONE", action="from_receipts") == 4


async def test_a_refusal_among_several_one_block_ranges_asks_them_one_by_one() -> None:
    chain = busy_chain()
    provider = FakeProvider(chain)

    def refuse_block_3(url: str, call: dict[str, Any]) -> dict[str, Any] | None:
        if call["method"] == "eth_getLogs" and call["params"][0]["fromBlock"] == hex(3):
            return {"error": {"code": -32005, "message": "query returned more than 10000 results"}}
        return None

    provider.faults.append(refuse_block_3)
    window = IntentWindowReader(client(provider, "RPC_ALONE"), [USDC], max_log_range=100)
    answers = await window.token_logs([1, 2, 3, 5], anchor=6)
    assert [[int(log["blockNumber"], 16) for log in a.logs] for a in answers] == [
        [1],
        [2],
        [3],
        [5],
    ]
    assert counter("intentd_rpc_log_refusals_total", chain="RPC_ALONE", action="alone") == 1
    assert provider.calls("eth_getBlockReceipts") == []


async def test_a_whole_batch_refused_for_its_log_queries_is_a_range_limit() -> None:
    class RefusingBatches(FakeProvider):
        async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
            calls = orjson.loads(body)
            queries = [c["params"][0] for c in calls if c["method"] == "eth_getLogs"]
            if any(int(q["toBlock"], 16) - int(q["fromBlock"], 16) >= 10 for q in queries):
                self.posts.append((url, calls))
                error = {"code": -32005, "message": "query returned more than 10000 results"}
                return 200, orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error})
            return await super().post(url, body, seconds)

    chain = busy_chain()
    reader = EvmChainReader(
        client(RefusingBatches(chain), "RPC_BATCH_LIMIT"), [USDC], max_log_range=40
    )
    raw = await reader.read_range(BlockRange(1, 40))
    assert raw.logs == chain.logs(1, 40, [USDC])
    assert reader.log_ranges.width <= 10


async def test_a_lagging_node_gives_no_log_answer_rather_than_a_short_one() -> None:
    chain = busy_chain()
    provider = FakeProvider(chain)
    provider.nodes[0] = Node(chain, lag=2)  # the only node is two blocks behind
    reader = EvmChainReader(client(provider, "RPC_LAG"), [USDC], max_log_range=100)
    with pytest.raises(MissingResult):
        await reader.read_range(BlockRange(30, 40))
    assert len(provider.posts) >= 4  # retried whole, as the client retries any null


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
        (-32005, "limit exceeded", True),  # ambiguous: ask for less, down to one block
        (-32005, "daily request count exceeded, request rate limited", False),
        (-32005, "project ID request rate exceeded", False),
        (-32603, "internal error", False),
    ],
)
def test_range_limit_errors_are_recognised(code: int, message: str, limit: bool) -> None:
    assert is_range_limit(code, message) is limit
