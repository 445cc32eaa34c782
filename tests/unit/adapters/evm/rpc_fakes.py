"""A JSON-RPC provider over :class:`FakeChain` at the HTTP transport, with its faults.

:class:`FakeProvider` answers the calls the readers make (blocks, logs with their
address, topic and ``blockHash`` filters, receipts, block receipts) from one or more
:class:`Node` s: the backends of a load-balanced provider, each the chain as seen some
blocks behind its head (a lagging node answers null above its head and, as older geth
does, silently cuts ``eth_getLogs`` at its head), or another :class:`FakeChain` (a
node on another fork). ``route`` picks the node that answers a POST (a load balancer
routes one request to one backend); ``between_calls`` runs after each call of a POST
(a node importing a block while it answers).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from prometheus_client import REGISTRY
from tests.unit.chain.chain_fakes import FakeChain

from intentd.adapters.evm.json_rpc import JsonRpcClient, RpcTransportError

__all__ = ["LIVE", "FakeProvider", "Fault", "Node", "client", "counter", "error_once"]

LIVE = "http://live.example"

Fault = Callable[[str, dict[str, Any]], dict[str, Any] | None]
"""Answers one call in place of the node (then it is spent), or None to pass."""


@dataclass
class Node:
    """One backend: ``chain`` as seen ``lag`` blocks behind its head."""

    chain: FakeChain
    lag: int = 0

    @property
    def head(self) -> int:
        return max(self.chain.head - self.lag, 0)


class FakeProvider:
    """A JSON-RPC provider over :class:`Node` s, with the faults a test arms."""

    def __init__(self, chain: FakeChain, *, log_limit: int | None = None) -> None:
        self.chain = chain
        self.nodes = [Node(chain)]
        self.route: Callable[[str, int, list[dict[str, Any]]], int] = lambda url, post, calls: 0
        """The node (index in ``nodes``) answering POST number ``post`` of ``calls`` to
        ``url``."""
        self.between_calls: Callable[[Node], None] | None = None
        self.log_limit = log_limit
        """``eth_getLogs`` over more blocks than this is refused (-32005)."""
        self.receipts_refused = 0
        """Refuse this many ``eth_getBlockReceipts`` calls (as a rate limit would)."""
        self.dead: set[str] = set()
        self.posts: list[tuple[str, list[dict[str, Any]]]] = []
        self.faults: list[Fault] = []  # each may answer one call in place of the node
        self.shuffle = False
        self.serving = self.nodes[0]

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        calls = orjson.loads(body)
        self.posts.append((url, calls))
        if url in self.dead:
            raise RpcTransportError("connection refused")
        self.serving = self.nodes[self.route(url, len(self.posts) - 1, calls)]
        answers = []
        for call in calls:
            answers.append(self._answer(url, call))
            if self.between_calls is not None:
                self.between_calls(self.serving)
        if self.shuffle:
            random.Random(len(self.posts)).shuffle(answers)
        return 200, orjson.dumps(answers)

    async def close(self) -> None:
        pass

    def calls(self, method: str) -> list[list[Any]]:
        """The params of every call of ``method`` sent so far."""
        return [c["params"] for _, batch in self.posts for c in batch if c["method"] == method]

    def _answer(self, url: str, call: dict[str, Any]) -> dict[str, Any]:
        for fault in list(self.faults):
            answer = fault(url, call)
            if answer is not None:
                self.faults.remove(fault)
                return {"jsonrpc": "2.0", "id": call["id"], **answer}
        return {"jsonrpc": "2.0", "id": call["id"], **self._node(call["method"], call["params"])}

    def _node(self, method: str, params: list[Any]) -> dict[str, Any]:
        node = self.serving
        chain, head = node.chain, node.head
        if method == "eth_blockNumber":
            return {"result": hex(head)}
        if method == "eth_getBlockByNumber":
            n = head if params[0] == "latest" else int(params[0], 16)
            return {"result": _header(chain.blocks[n], params[1]) if n <= head else None}
        if method == "eth_getLogs":
            return self._logs(node, params[0])
        if method == "eth_getTransactionReceipt":
            return {"result": _receipt_on(node, params[0])}
        if method == "eth_getBlockReceipts":
            if self.receipts_refused:
                self.receipts_refused -= 1
                return {"error": {"code": -32005, "message": "limit exceeded"}}
            n = _number_of(node, params[0])
            return {"result": None if n is None else _block_receipts(chain, n)}
        return {"error": {"code": -32601, "message": f"method {method} not found"}}

    def _logs(self, node: Node, query: dict[str, Any]) -> dict[str, Any]:
        if "blockHash" in query:
            n = _number_of(node, query["blockHash"])
            if n is None:
                return {"error": {"code": -32000, "message": "unknown block"}}
            first = last = n
        else:
            first, last = int(query["fromBlock"], 16), int(query["toBlock"], 16)
        if self.log_limit is not None and last - first + 1 > self.log_limit:
            return {"error": {"code": -32005, "message": "query returned more than 10000 results"}}
        found = node.chain.logs(first, min(last, node.head), query.get("address"))
        topics = query.get("topics") or []
        return {
            "result": [
                log
                for log in found
                if all(
                    t is None or (i < len(log["topics"]) and log["topics"][i] in _any(t))
                    for i, t in enumerate(topics)
                )
            ]
        }


def _any(topic: str | list[str]) -> list[str]:
    return topic if isinstance(topic, list) else [topic]


def _header(block: dict[str, Any], full: bool) -> dict[str, Any]:
    if full:
        return block
    return {**block, "transactions": [tx["hash"] for tx in block["transactions"]]}


def _number_of(node: Node, tag: str) -> int | None:
    """The height of the block ``tag`` (a number or a hash) on the node, if it has it."""
    if len(tag) < 66:
        n = int(tag, 16)
        return n if n <= node.head else None
    for n in range(node.head + 1):
        if node.chain.blocks[n]["hash"] == tag:
            return n
    return None


def _receipt_on(node: Node, tx_hash: str) -> dict[str, Any] | None:
    found = node.chain.receipts.get(tx_hash)
    if found is None:
        return None
    n = int(found["blockNumber"], 16)
    if n > node.head or node.chain.blocks[n]["hash"] != found["blockHash"]:
        return None
    return found


def _block_receipts(chain: FakeChain, n: int) -> list[dict[str, Any]]:
    logs = chain.logs_by_block[n]
    return [
        {
            **chain.receipts[tx["hash"]],
            "logs": [log for log in logs if log["transactionHash"] == tx["hash"]],
        }
        for tx in chain.blocks[n]["transactions"]
    ]


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
