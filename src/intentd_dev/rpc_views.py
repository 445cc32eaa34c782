"""A node's view of an EVM chain that lags the real one, made by rewriting JSON-RPC calls.

A provider behind a load balancer answers each request from one of its nodes, and the
nodes are seconds apart; a failover URL may be a copy that is always a few blocks
behind; a node's receipt index may trail its block index. :func:`answer` turns one
honest upstream node (an anvil) into such a node: given the real head and a
:class:`View`, it answers a JSON-RPC batch as a node whose head is ``head - lag`` and
whose newest ``trail`` blocks have no receipts yet would:

- ``eth_blockNumber`` is the view's head; the tags ``latest`` and ``pending`` mean it;
- a block above the view's head is ``null`` (by number or by hash), and so is a
  transaction or a receipt in one; a receipt in the newest ``trail`` blocks of the view
  is ``null`` while its block is served (``eth_getBlockReceipts`` too);
- a state read (``eth_getBalance``, ``eth_getTransactionCount``, ``eth_call``, ...) at a
  block above the view's head is the error ``-32000 header not found``;
- ``eth_getLogs`` is silently cut at the view's head (a range that starts above it is
  ``[]``), as older geth does: no error says the answer is short;
- everything else (``eth_sendRawTransaction``, ``eth_chainId``, ...) is forwarded.

Dev tooling only (the chaos run's RPC fault proxy, ``intentd_dev.rpc_faults``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["HEADER_NOT_FOUND", "Upstream", "View", "answer"]

Upstream = Callable[[list[dict[str, Any]]], Awaitable[list[dict[str, Any]]]]
"""Sends a batch of JSON-RPC request objects to the honest node; its answers, any order."""

HEADER_NOT_FOUND = {"code": -32000, "message": "header not found"}

_ERROR, _NULL, _CLAMP = "error", "null", "clamp"
_BLOCK_PARAM: dict[str, tuple[int, str]] = {
    # state reads: above the view's head, header not found
    "eth_getBalance": (1, _ERROR),
    "eth_getTransactionCount": (1, _ERROR),
    "eth_getCode": (1, _ERROR),
    "eth_getStorageAt": (2, _ERROR),
    "eth_call": (1, _ERROR),
    "eth_estimateGas": (1, _ERROR),
    "eth_createAccessList": (1, _ERROR),
    "eth_getProof": (2, _ERROR),
    # block reads by number: above the view's head, null
    "eth_getBlockByNumber": (0, _NULL),
    "eth_getBlockTransactionCountByNumber": (0, _NULL),
    "eth_getTransactionByBlockNumberAndIndex": (0, _NULL),
    "eth_getUncleCountByBlockNumber": (0, _NULL),
    "eth_getBlockReceipts": (0, _NULL),  # above the view's receipts, null
    "eth_feeHistory": (1, _CLAMP),  # the newest block: at most the view's head
}
"""Calls that name a block: the position of the parameter, and the answer above the view."""
_BLOCK_RESULTS = {
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getTransactionByHash",
    "eth_getTransactionByBlockHashAndIndex",
    "eth_getTransactionByBlockNumberAndIndex",
}
"""Answers that carry their block's number (``number`` or ``blockNumber``)."""
_HEAD_TAGS = {"latest", "pending"}


@dataclass(frozen=True)
class View:
    """How far a node is behind: ``lag`` blocks of head, ``trail`` more of receipts."""

    lag: int = 0
    trail: int = 0

    @property
    def honest(self) -> bool:
        return self.lag == 0 and self.trail == 0


async def answer(
    calls: list[dict[str, Any]], view: View, head: int, upstream: Upstream
) -> list[dict[str, Any]]:
    """The answers, in order, of a node ``view`` behind an honest one whose head is ``head``."""
    top = head - view.lag
    receipts_top = top - view.trail
    hashes = await _numbers_of_hashes(calls, upstream)
    local: dict[int, dict[str, Any]] = {}
    forward: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        mine = dict(call)
        done = _rewrite(mine, top, receipts_top, hashes)
        if done is not None:
            local[i] = {"jsonrpc": "2.0", "id": call.get("id"), **done}
        else:
            forward.append({**mine, "id": i})
    by_index: dict[Any, dict[str, Any]] = {}
    if forward:
        for item in await upstream(forward):
            by_index[item.get("id")] = item
    answers = []
    for i, call in enumerate(calls):
        if i in local:
            answers.append(local[i])
            continue
        item = dict(by_index.get(i) or {"error": {"code": -32603, "message": "no answer"}})
        item["id"] = call.get("id")
        if "result" in item:
            item["result"] = _filter(call, item["result"], top, receipts_top)
        answers.append(item)
    return answers


def _rewrite(
    call: dict[str, Any], top: int, receipts_top: int, hashes: dict[str, int | None]
) -> dict[str, Any] | None:
    """Rewrite ``call`` (a copy) for the view; an answer of its own if it needs no node."""
    method = str(call.get("method"))
    params = list(call.get("params") or [])
    call["params"] = params
    if method == "eth_blockNumber":
        return {"result": hex(top)}
    if method == "eth_getLogs":
        return _rewrite_logs(params, top) if params and isinstance(params[0], dict) else None
    if method not in _BLOCK_PARAM or len(params) <= _BLOCK_PARAM[method][0]:
        return None
    at, above = _BLOCK_PARAM[method]
    limit = receipts_top if method == "eth_getBlockReceipts" else top
    number = _number(params[at], top, hashes)
    if number is not None and number > limit:
        if above == _ERROR:
            return {"error": dict(HEADER_NOT_FOUND)}
        if above == _NULL:
            return {"result": None}
        params[at] = hex(top)
    elif _is_head_tag(params[at]):
        params[at] = hex(top)
    return None


def _rewrite_logs(params: list[Any], top: int) -> dict[str, Any] | None:
    query = dict(params[0])
    params[0] = query
    if "blockHash" in query:
        return None  # the answer is filtered by block number
    low = _tag_or_number(query.get("fromBlock", "latest"), top)
    high = _tag_or_number(query.get("toBlock", "latest"), top)
    if low is None or high is None:
        return None  # safe, finalized: let the node answer, then filter
    high = min(high, top)
    if low > high:
        return {"result": []}
    query["fromBlock"], query["toBlock"] = hex(low), hex(high)
    return None


def _filter(call: dict[str, Any], result: Any, top: int, receipts_top: int) -> Any:
    """The honest node's ``result`` as the lagging view answers it."""
    method = call.get("method")
    if result is None:
        return None
    if method in _BLOCK_RESULTS and isinstance(result, dict):
        number = result.get("number", result.get("blockNumber"))
        if isinstance(number, str) and int(number, 16) > top:
            return None
    if method == "eth_getTransactionReceipt" and isinstance(result, dict):
        number = result.get("blockNumber")
        if isinstance(number, str) and int(number, 16) > receipts_top:
            return None
    if method == "eth_getLogs" and isinstance(result, list):
        return [
            log
            for log in result
            if not isinstance(log.get("blockNumber"), str) or int(log["blockNumber"], 16) <= top
        ]
    return result


def _is_head_tag(value: Any) -> bool:
    return isinstance(value, str) and value in _HEAD_TAGS


def _tag_or_number(value: Any, top: int) -> int | None:
    if _is_head_tag(value):
        return top
    if value == "earliest":
        return 0
    if isinstance(value, str) and value.startswith("0x"):
        return int(value, 16)
    return None


def _number(value: Any, top: int, hashes: dict[str, int | None]) -> int | None:
    """The block number a block parameter names (None: a tag the node resolves itself)."""
    if isinstance(value, dict):
        if "blockNumber" in value:
            return _tag_or_number(value["blockNumber"], top)
        if "blockHash" in value:
            known = hashes.get(str(value["blockHash"]).lower())
            return known if known is not None else top + 1  # unknown: not on this node
        return None
    if _is_head_tag(value):
        return None
    return _tag_or_number(value, top)


async def _numbers_of_hashes(
    calls: list[dict[str, Any]], upstream: Upstream
) -> dict[str, int | None]:
    """Block numbers of the EIP-1898 ``{"blockHash": ...}`` parameters of ``calls``."""
    wanted: set[str] = set()
    for call in calls:
        for param in call.get("params") or []:
            hashed = isinstance(param, dict) and isinstance(param.get("blockHash"), str)
            if hashed and call.get("method") != "eth_getLogs":
                wanted.add(param["blockHash"].lower())
    if not wanted:
        return {}
    ordered = sorted(wanted)
    asked = [
        {"jsonrpc": "2.0", "id": i, "method": "eth_getBlockByHash", "params": [h, False]}
        for i, h in enumerate(ordered)
    ]
    found: dict[str, int | None] = dict.fromkeys(ordered)
    for item in await upstream(asked):
        block = item.get("result")
        if isinstance(block, dict) and isinstance(item.get("id"), int):
            found[ordered[item["id"]]] = int(block["number"], 16)
    return found
