"""Every RPC URL must answer our chain: eth_chainId is checked before a URL is first
used and again after every failover; a URL answering another chain is never used."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from tests.log_capture import own_logs
from tests.unit.adapters.evm.rpc_fakes import FakeProvider, client, counter
from tests.unit.chain.chain_fakes import FakeChain

from intentd.adapters.evm.chain_reader import EvmChainReader
from intentd.adapters.evm.json_rpc import RpcTransportError, WrongChainError

GOOD = "http://good.example"
OTHER = "http://other.example"
KEYED = "https://rpc.example/v2/s3cr3tk3y"


class ChainIdProvider(FakeProvider):
    def __init__(self, chain_ids: dict[str, int]) -> None:
        chain = FakeChain()
        chain.mine()
        super().__init__(chain)
        self.chain_ids = chain_ids

    def _node(self, method: str, params: list[Any]) -> dict[str, Any]:
        if method == "eth_chainId":
            raise AssertionError("answered per URL in post()")
        return super()._node(method, params)

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        calls = orjson.loads(body)
        if [c["method"] for c in calls] == ["eth_chainId"]:
            self.posts.append((url, calls))
            if url in self.dead:
                raise RpcTransportError("connection refused")
            answer = {"jsonrpc": "2.0", "id": calls[0]["id"], "result": hex(self.chain_ids[url])}
            return 200, orjson.dumps([answer])
        return await super().post(url, body, seconds)

    def methods(self, url: str) -> list[str]:
        return [c["method"] for u, calls in self.posts if u == url for c in calls]


async def test_a_url_answering_another_chain_is_never_used() -> None:
    provider = ChainIdProvider({OTHER: 1, GOOD: 8453})
    rpc = client(provider, "RPC_WRONG_CHAIN", [OTHER, GOOD], chain_id=8453)
    with own_logs() as logs:
        assert await rpc.call("eth_blockNumber", []) == "0x1"
    assert provider.methods(OTHER) == ["eth_chainId"]
    assert provider.methods(GOOD) == ["eth_chainId", "eth_blockNumber"]
    assert counter("intentd_rpc_wrong_chain_total", chain="RPC_WRONG_CHAIN") == 1
    [error] = [e for e in logs if e["log_level"] == "error"]
    assert (error["expected"], error["answered"], error["url"]) == (8453, 1, OTHER)


async def test_the_chain_is_checked_once_then_again_after_every_failover() -> None:
    provider = ChainIdProvider({GOOD: 10, KEYED: 10})
    rpc = client(provider, "RPC_RECHECK", [GOOD, KEYED], chain_id=10)
    await rpc.call("eth_blockNumber", [])
    await rpc.call("eth_blockNumber", [])
    assert provider.methods(GOOD) == ["eth_chainId", "eth_blockNumber", "eth_blockNumber"]
    provider.dead.add(GOOD)
    await rpc.call("eth_blockNumber", [])  # fails over to KEYED, checked first
    assert provider.methods(KEYED) == ["eth_chainId", "eth_blockNumber"]
    used = provider.methods(GOOD).count("eth_blockNumber")
    provider.dead = {KEYED}
    provider.chain_ids[GOOD] = 11  # GOOD now serves another chain: never used again
    with pytest.raises((WrongChainError, RpcTransportError)):
        await rpc.call("eth_blockNumber", [])
    assert provider.methods(GOOD).count("eth_blockNumber") == used
    assert provider.methods(GOOD)[-2:] == ["eth_chainId", "eth_chainId"]


async def test_urls_are_redacted_in_logs() -> None:
    provider = ChainIdProvider({KEYED: 5, GOOD: 10})
    rpc = client(provider, "RPC_REDACT", [KEYED, GOOD], chain_id=10)
    with own_logs() as logs:
        await rpc.call("eth_blockNumber", [])
    assert logs and "s3cr3tk3y" not in repr(logs)
    assert any(e.get("url") == "https://rpc.example/<redacted>" for e in logs)


async def test_without_a_chain_id_nothing_is_checked() -> None:
    provider = ChainIdProvider({GOOD: 10})
    rpc = client(provider, "RPC_UNCHECKED", [GOOD])
    await rpc.call("eth_blockNumber", [])
    assert provider.methods(GOOD) == ["eth_blockNumber"]


class TaggedProvider(ChainIdProvider):
    def _node(self, method: str, params: list[Any]) -> dict[str, Any]:
        if method == "eth_getBlockByNumber" and params[0] in ("safe", "finalized"):
            number = {"safe": 7, "finalized": 4}[params[0]]
            return {"result": {"number": hex(number), "hash": "0x" + "ab" * 32}}
        if method == "eth_blockNumber":
            return {"result": hex(12)}
        return super()._node(method, params)


@pytest.mark.parametrize(("head", "number"), [("latest", 12), ("safe", 7), ("finalized", 4)])
async def test_the_reader_follows_the_head_the_chain_trusts(head: str, number: int) -> None:
    provider = TaggedProvider({GOOD: 10})
    reader = EvmChainReader(client(provider, "RPC_HEAD", [GOOD]), [], max_log_range=10, head=head)
    assert await reader.latest_block() == number


async def test_a_url_of_another_chain_is_told_once_per_process_until_it_answers_ours() -> None:
    """A URL that answers another chain is asked at every attempt (a price refresher
    every 30 s, each client of the process): one error line for it in the process, the
    metric counting each attempt, one line when it answers our chain again."""
    provider = ChainIdProvider({OTHER: 1})
    with own_logs() as logs:
        for _ in range(3):  # three clients of the process (roles, refreshers), 4 attempts each
            rpc = client(provider, "RPC_WRONG_AGAIN", [OTHER], chain_id=8453)
            with pytest.raises(WrongChainError):
                await rpc.call("eth_blockNumber", [])
        provider.chain_ids[OTHER] = 8453  # fixed by its operator
        rpc = client(provider, "RPC_WRONG_AGAIN", [OTHER], chain_id=8453)
        assert await rpc.call("eth_blockNumber", []) == "0x1"
    assert counter("intentd_rpc_wrong_chain_total", chain="RPC_WRONG_AGAIN") == 12
    told = [
        (e["event"], e["log_level"])
        for e in logs
        if e.get("url") == OTHER and e["log_level"] != "debug"  # each failed attempt's
    ]
    assert told == [
        ("rpc url answers another chain; not used", "error"),
        ("rpc url answers our chain again", "info"),
    ]
