"""The executor's chain writer over a scripted JSON-RPC node: a view is one POST (or
several, merged on the safe side), and a nonce's use is proven from one POST about
its block."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from intentd.adapters.evm.chain_writer import EvmChainWriter
from intentd.adapters.evm.json_rpc import JsonRpcClient, MissingResult
from intentd.execution.tracking import NonceUse

SIGNER = "0x" + "aa" * 20
URL = "http://node.example"


def tx_hash(n: int) -> str:
    return f"0x{n:064x}"


class Node:
    """A chain of ``height + 1`` blocks; the signer's nonce ``k`` is used in block
    ``blocks[k]`` by transaction ``hashes[k]``. Each POST may be answered as a node
    ``lag`` blocks behind (the next of :attr:`lags`, else 0)."""

    def __init__(self, height: int, uses: dict[int, tuple[int, str]]) -> None:
        self.height = height
        self.uses = uses  # nonce → (block, hash)
        self.lags: list[int] = []
        self.posts: list[list[str]] = []
        self.malformed = False
        self.bodies = True

    def count(self, block: int) -> int:
        return sum(1 for b, _ in self.uses.values() if b <= block)

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        calls = orjson.loads(body)
        self.posts.append([c["method"] for c in calls])
        top = self.height - (self.lags.pop(0) if self.lags else 0)
        return 200, orjson.dumps(
            [{"jsonrpc": "2.0", "id": c["id"], **self._answer(c, top)} for c in calls]
        )

    def _answer(self, call: dict[str, Any], top: int) -> dict[str, Any]:
        method, params = call["method"], call["params"]
        if method == "eth_chainId":
            return {"result": "0x1"}
        if method == "eth_blockNumber":
            return {"result": hex(top)}
        if method == "eth_getTransactionCount":
            block = int(params[1], 16)
            if block > top:
                return {"error": {"code": -32000, "message": "header not found"}}
            return {"result": hex(self.count(block))}
        if method == "eth_getTransactionReceipt":
            for block, h in self.uses.values():
                if h == params[0] and block <= top:
                    return {"result": self._receipt(h, block)}
            return {"result": None}
        if method == "eth_getBlockByNumber":
            block = int(params[0], 16)
            if block > top or not self.bodies:
                return {"result": None}
            txs = [
                {"from": SIGNER, "nonce": hex(n), "hash": h}
                for n, (b, h) in self.uses.items()
                if b == block
            ]
            if self.malformed:
                txs = [{"hash": t["hash"]} for t in txs]
            return {
                "result": {
                    "number": hex(block),
                    "hash": tx_hash(10_000 + block),
                    "transactions": txs,
                }
            }
        raise AssertionError(method)

    @staticmethod
    def _receipt(h: str, block: int) -> dict[str, Any]:
        return {
            "transactionHash": h, "blockNumber": hex(block), "blockHash": tx_hash(10_000 + block),
            "status": "0x1", "gasUsed": "0x5208", "effectiveGasPrice": "0x1",
        }  # fmt: skip

    async def close(self) -> None:
        pass


def writer(node: Node, max_calls: int = 50) -> EvmChainWriter:
    def rpc() -> JsonRpcClient:
        return JsonRpcClient(
            "X", [URL], transport=node, backoff=0.001, backoff_max=0.002, attempts=3,
            max_calls=max_calls,
        )  # fmt: skip

    return EvmChainWriter(rpc(), rpc())


async def test_a_view_is_one_post_with_the_head_the_counts_and_the_receipts() -> None:
    node = Node(100, {0: (40, tx_hash(1)), 1: (99, tx_hash(2))})
    view = await writer(node).view([SIGNER], [tx_hash(1), tx_hash(2), tx_hash(3)], 98)
    assert node.posts == [
        ["eth_blockNumber", "eth_getTransactionCount"] + ["eth_getTransactionReceipt"] * 3
    ]
    assert (view.head, view.nonces) == (100, {SIGNER: 1})
    found = view.receipts[tx_hash(2)]
    assert found is not None and found.block_number == 99
    assert view.receipts[tx_hash(1)] is not None and view.receipts[tx_hash(3)] is None


async def test_a_view_too_big_for_one_post_is_merged_on_the_safe_side() -> None:
    node = Node(100, {0: (97, tx_hash(1))})
    node.lags = [0, 2]  # the second POST lands on a node 2 behind
    hashes = [tx_hash(n) for n in range(1, 7)]
    view = await writer(node, max_calls=5).view([SIGNER], hashes, 97)
    assert len(node.posts) == 2 and all(p[0] == "eth_blockNumber" for p in node.posts)
    assert view.head == 98  # the lowest: finality is judged against it
    assert view.receipts[tx_hash(1)] is not None  # any node's receipt is evidence


async def test_the_block_that_used_a_nonce_is_found_and_proves_who_used_it() -> None:
    foreign = "0x" + "ee" * 32
    node = Node(1000, {n: (n * 10, tx_hash(100 + n)) for n in range(7)} | {7: (990, foreign)})
    use = await writer(node).nonce_use(SIGNER, 7, 999, [tx_hash(1)])
    assert use == NonceUse(990, tx_hash(10_990), foreign, None)
    searched = [p for p in node.posts if p == ["eth_getTransactionCount"]]
    assert len(searched) <= 2 * (999 - 990 + 1).bit_length() + 1
    assert node.posts[-1] == [
        "eth_getTransactionCount", "eth_getTransactionCount", "eth_getBlockByNumber",
        "eth_getTransactionReceipt",
    ]  # fmt: skip


async def test_ours_found_comes_with_its_receipt_even_when_the_receipts_do_not_fit() -> None:
    node = Node(100, {0: (95, tx_hash(3))})
    ours = [tx_hash(n) for n in range(1, 5)]
    use = await writer(node, max_calls=5).nonce_use(SIGNER, 0, 99, ours)
    assert use is not None and use.tx_hash == tx_hash(3)
    assert use.receipt is not None and use.receipt.block_hash == tx_hash(10_095)


async def test_a_node_without_the_block_proves_nothing_and_a_retry_may() -> None:
    node = Node(100, {0: (95, tx_hash(3))})
    node.bodies = False  # counts answered, the block not (pruned bodies, a light node)
    w = writer(node)
    assert await w.nonce_use(SIGNER, 0, 99, [tx_hash(9)]) is None
    node.bodies = True
    assert await w.nonce_use(SIGNER, 0, 99, [tx_hash(9)]) == NonceUse(
        95, tx_hash(10_095), tx_hash(3), None
    )


async def test_a_malformed_block_is_a_chain_error_not_a_crash() -> None:
    node = Node(100, {0: (95, tx_hash(3))})
    node.malformed = True
    with pytest.raises(MissingResult, match="malformed"):
        await writer(node).nonce_use(SIGNER, 0, 99, [tx_hash(3)])
