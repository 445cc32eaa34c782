"""A JSON-RPC proxy in front of an EVM node that fails, hangs, resets and lags on command.

:class:`RpcFaultProxy` listens on a local port (aiohttp) and forwards every POST to one
upstream node (an anvil). While no burst is active it is invisible (the body is
forwarded byte for byte). :meth:`RpcFaultProxy.burst` starts a fault for some
seconds; while it lasts, each POST (a single call or a batch, as a load balancer routes
one request to one backend) meets it with probability ``share``:

- ``http``: HTTP 500, 502 or 429 (the 429 with ``Retry-After: 1``), not forwarded;
- ``rpc_error``: JSON-RPC errors: ``-32005 limit exceeded`` on ``eth_getLogs``,
  ``-32000 header not found`` on every call that names a block; other calls forwarded;
- ``hang``: no answer for ``hang_seconds`` (past the client's timeout), then the
  connection is reset; not forwarded;
- ``reset``: forwarded (a raw transaction is broadcast), then the connection is reset
  halfway through the answer;
- ``lag``: answered by a node ``blocks`` behind (``intentd_dev.rpc_views``): a
  load-balanced provider whose calls land on one of two nodes a few blocks apart;
- ``receipts``: receipts of the newest ``blocks`` blocks are ``null`` while the blocks
  are served (every POST of the burst; ``share`` is ignored).

A proxy made with ``lag=k`` is always ``k`` blocks behind (a stale copy behind a second
URL). Draws come from ``random.Random(seed)``: the schedule of a run is reproducible,
the interleaving with the client's requests is not. Dev tooling only: it runs in the
caller's event loop; :attr:`served` counts what each POST got.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
import orjson
from aiohttp import web

from intentd_dev.rpc_views import HEADER_NOT_FOUND, View, answer

__all__ = ["Fault", "RpcFaultProxy"]

Fault = Literal["http", "rpc_error", "hang", "reset", "lag", "receipts"]
_ERRORS: tuple[Fault, ...] = ("http", "rpc_error", "hang", "reset")
_LIMIT_EXCEEDED = {"code": -32005, "message": "limit exceeded"}
_NAMES_A_BLOCK = {
    "eth_getLogs",
    "eth_getBlockByNumber",
    "eth_getBalance",
    "eth_getTransactionCount",
    "eth_call",
    "eth_getCode",
    "eth_getStorageAt",
    "eth_feeHistory",
    "eth_getBlockReceipts",
}


@dataclass
class _Burst:
    fault: Fault
    until: float
    share: float
    blocks: int


class RpcFaultProxy:
    """Forwards JSON-RPC POSTs to ``upstream`` (``http://host:port``), failing on command."""

    def __init__(
        self,
        upstream: str,
        *,
        seed: int = 0,
        lag: int = 0,
        hang_seconds: float = 15.0,
        host: str = "127.0.0.1",
    ) -> None:
        self._upstream = upstream
        self._rng = random.Random(seed)  # noqa: S311 - a reproducible schedule, not a secret
        self._lag = lag
        self.hang_seconds = hang_seconds
        self._host = host
        self._port = 0
        self._bursts: list[_Burst] = []
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self.served: Counter[str] = Counter()
        """POSTs by what they got: ``forwarded``, a fault's name, ``lagging``, ``trailing``."""

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    async def start(self, port: int = 0) -> None:
        self._session = aiohttp.ClientSession(
            headers={"Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=30),
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, port))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def burst(self, fault: Fault, seconds: float, *, share: float = 1.0, blocks: int = 0) -> None:
        """Start ``fault`` for ``seconds`` (``blocks``: how far ``lag`` and ``receipts`` trail)."""
        if fault in ("lag", "receipts") and blocks < 1:
            raise ValueError(f"a {fault} burst needs blocks >= 1")
        until = asyncio.get_running_loop().time() + seconds
        self._bursts.append(_Burst(fault, until, share, blocks))

    def clear(self) -> None:
        """End every burst now."""
        self._bursts.clear()

    def active(self) -> list[Fault]:
        now = asyncio.get_running_loop().time()
        self._bursts = [b for b in self._bursts if b.until > now]
        return [b.fault for b in self._bursts]

    def _error(self) -> Fault | None:
        self.active()
        for burst in self._bursts:
            if burst.fault in _ERRORS and self._rng.random() < burst.share:
                return burst.fault
        return None

    def _view(self) -> View:
        lag, trail = self._lag, 0
        for burst in self._bursts:
            if burst.fault == "lag" and self._rng.random() < burst.share:
                lag = max(lag, burst.blocks)
            elif burst.fault == "receipts":
                trail = max(trail, burst.blocks)
        return View(lag, trail)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        fault = self._error()
        if fault == "http":
            self.served["http"] += 1
            status = self._rng.choice((500, 502, 429))
            headers = {"Retry-After": "1"} if status == 429 else {}
            return web.Response(status=status, text=f"fault proxy: {status}", headers=headers)
        if fault == "hang":
            self.served["hang"] += 1
            await asyncio.sleep(self.hang_seconds)
            _reset(request)
            return web.Response(status=504)
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            payload = None
        calls = payload if isinstance(payload, list) else [payload]
        if payload is None or not all(isinstance(c, dict) for c in calls):
            status, raw = await self._post(body)
        else:
            answers = await self._answer(calls, fault)
            status = 200
            raw = orjson.dumps(answers if isinstance(payload, list) else answers[0])
        if fault == "reset":
            self.served["reset"] += 1
            return await _reset_halfway(request, raw)
        return web.Response(status=status, body=raw, content_type="application/json")

    async def _answer(self, calls: list[dict[str, Any]], fault: Fault | None) -> list[Any]:
        if fault == "rpc_error":
            self.served["rpc_error"] += 1
            return await self._errors(calls)
        view = self._view()
        if view.honest:
            if fault is None:
                self.served["forwarded"] += 1
            return await self._upstream_batch(calls)
        self.served["lagging" if view.lag else "trailing"] += 1
        head = await self._head()
        return await answer(calls, view, head, self._upstream_batch)

    async def _errors(self, calls: list[dict[str, Any]]) -> list[Any]:
        answers: dict[int, Any] = {}
        forward = []
        for i, call in enumerate(calls):
            method = call.get("method")
            if method == "eth_getLogs":
                answers[i] = {"jsonrpc": "2.0", "id": call.get("id"), "error": _LIMIT_EXCEEDED}
            elif method in _NAMES_A_BLOCK:
                answers[i] = {"jsonrpc": "2.0", "id": call.get("id"), "error": HEADER_NOT_FOUND}
            else:
                forward.append((i, call))
        if forward:
            got = await self._upstream_batch([c for _, c in forward])
            for (i, _), item in zip(forward, got, strict=True):
                answers[i] = item
        return [answers[i] for i in range(len(calls))]

    async def _head(self) -> int:
        [item] = await self._upstream_batch(
            [{"jsonrpc": "2.0", "id": 0, "method": "eth_blockNumber", "params": []}]
        )
        return int(item["result"], 16)

    async def _upstream_batch(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``calls`` answered by the upstream node, in the order asked."""
        status, raw = await self._post(orjson.dumps(calls))
        got = orjson.loads(raw) if status == 200 else None
        if not isinstance(got, list):
            error = {"code": -32603, "message": f"upstream answered HTTP {status}"}
            return [{"jsonrpc": "2.0", "id": c.get("id"), "error": error} for c in calls]
        by_id = {item.get("id"): item for item in got if isinstance(item, dict)}
        missing = {"code": -32603, "message": "upstream gave no answer"}
        return [
            by_id.get(c.get("id"), {"jsonrpc": "2.0", "id": c.get("id"), "error": missing})
            for c in calls
        ]

    async def _post(self, body: bytes) -> tuple[int, bytes]:
        assert self._session is not None, "start() first"
        try:
            async with self._session.post(self._upstream, data=body) as response:
                return response.status, await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            return 502, f"fault proxy: upstream failed: {exc!r}".encode()


async def _reset_halfway(request: web.Request, raw: bytes) -> web.StreamResponse:
    """Send the headers and half the body, then reset the connection (TCP RST)."""
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.content_length = len(raw)
    await response.prepare(request)
    with contextlib.suppress(ConnectionError, RuntimeError):
        await response.write(raw[: len(raw) // 2])
    _reset(request)
    return response


def _reset(request: web.Request) -> None:
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
