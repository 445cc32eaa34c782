"""The reconciliation's balance reads (issue 18, item 3): 10^4 open native-coin intents
cost a batch few POSTs, each call pinned to an explicit block (a hash), never a tag."""

from __future__ import annotations

import orjson

from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.adapters.evm.state_reader import EvmChainState, open_chain_state
from intentd.settings import ChainConfig

BLOCK = "0x" + "ab" * 32


class Node:
    """Answers every balance with its call's position; records each POST's calls."""

    def __init__(self) -> None:
        self.posts: list[list[dict[str, object]]] = []

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        calls = orjson.loads(body)
        self.posts.append(calls)
        return 200, orjson.dumps(
            [{"jsonrpc": "2.0", "id": c["id"], "result": hex(c["id"])} for c in calls]
        )

    async def close(self) -> None:
        pass


def chain(**overrides: object) -> ChainConfig:
    fields: dict[str, object] = {
        "name": "C", "chain_id": 1, "network": "test", "rpc_urls": ["http://node.example"],
    }  # fmt: skip
    return ChainConfig.model_validate(fields | overrides)


async def test_ten_thousand_balances_go_in_posts_of_the_providers_batch_limit() -> None:
    node = Node()
    client = JsonRpcClient("C", ["http://node.example"], transport=node, max_calls=1000)
    addresses = [f"0x{n:040x}" for n in range(10_000)]

    balances = await EvmChainState(client).balances([(a, BLOCK) for a in addresses])

    assert len(node.posts) == 10
    assert balances == [n % 1000 for n in range(10_000)]  # each POST numbers its calls
    calls = [call for post in node.posts for call in post]
    assert {call["method"] for call in calls} == {"eth_getBalance"}
    assert [call["params"] for call in calls] == [[a, {"blockHash": BLOCK}] for a in addresses]


def test_the_poller_reads_balances_up_to_the_chains_batch_limit() -> None:
    assert chain().rpc_batch_limit == 100
    client, _ = open_chain_state(chain(rpc_batch_limit=1000))
    assert client.max_calls == 1000
