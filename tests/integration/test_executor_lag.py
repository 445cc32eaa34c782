"""The executor on a real anvil read through a provider that lags (issue 18, item 1).

A small JSON-RPC proxy in front of anvil answers some requests as a node ``behind``
blocks below the head, the way a load balancer with a lagging backend (or a failover
URL that lags) does: ``eth_blockNumber`` is the head less ``behind``, a receipt or a
block above that height is null, a count at a block above it is "header not found"
(geth's error), and ``latest`` tags are rewritten to that height. Broadcasts and the
pool (``pending``) go through unchanged. Every recipient must be paid exactly once.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from tests.integration import test_executor
from tests.integration.test_executor import (
    Chain,
    Running,
    executor_settings,
    pending_nonce,
    seed_action,
    transactions,
)

from intentd.adapters.postgres import Pool
from intentd.settings import Settings

pytestmark = pytest.mark.integration
make_chain = test_executor.make_chain  # an anvil of its own, mining every 0.5 s

HEADER_NOT_FOUND = {"code": -32000, "message": "header not found"}


class LaggingProxy:
    """JSON-RPC in front of ``upstream``: a request is answered, with probability
    ``share``, as a node ``behind`` blocks below the head (see the module docstring);
    with ``only``, just those methods are (a receipt index that trails the blocks)."""

    def __init__(
        self,
        upstream: str,
        *,
        behind: int,
        share: float,
        seed: int = 0,
        only: frozenset[str] | None = None,
    ) -> None:
        self.upstream = upstream
        self.behind = behind
        self.share = share
        self.only = only
        self.random = random.Random(seed)
        self.lagged = 0
        self.requests = 0
        self._session: aiohttp.ClientSession | None = None

    async def _post(self, body: Any) -> Any:
        assert self._session is not None
        async with self._session.post(self.upstream, data=orjson.dumps(body)) as response:
            return orjson.loads(await response.read())

    async def handle(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        calls = body if isinstance(body, list) else [body]
        self.requests += 1
        if self.random.random() < self.share:
            self.lagged += 1
            answers = await self._lagging(calls)
        else:
            answers = await self._post(calls)
        return web.Response(
            body=orjson.dumps(answers if isinstance(body, list) else answers[0]),
            content_type="application/json",
        )

    async def _lagging(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        [head] = await self._post(
            [{"jsonrpc": "2.0", "id": 0, "method": "eth_blockNumber", "params": []}]
        )
        height = max(int(head["result"], 16) - self.behind, 0)
        local: dict[Any, dict[str, Any]] = {}
        forward = []
        for call in calls:
            method, params = call["method"], list(call.get("params", []))
            if self.only is not None and method not in self.only:
                forward.append(call)
                continue
            answer = self._local(method, params, height)
            if answer is not None:
                local[call["id"]] = {"jsonrpc": "2.0", "id": call["id"], **answer}
                continue
            forward.append({**call, "params": [_at(p, height) for p in params]})
        answered = {a["id"]: a for a in (await self._post(forward) if forward else [])}
        out = []
        for call in calls:
            answer = local.get(call["id"]) or answered[call["id"]]
            result = answer.get("result")
            lags = self.only is None or call["method"] in self.only
            if lags and isinstance(result, dict) and _block_of(result) > height:
                answer = {**answer, "result": None}  # a receipt or block it does not have
            out.append(answer)
        return out

    @staticmethod
    def _local(method: str, params: list[Any], height: int) -> dict[str, Any] | None:
        if method == "eth_blockNumber":
            return {"result": hex(height)}
        if method == "eth_getTransactionCount" and _number(params[1]) > height:
            return {"error": HEADER_NOT_FOUND}
        if method == "eth_getBlockByNumber" and _number(params[0]) > height:
            return {"result": None}
        return None

    async def start(self) -> str:
        self._session = aiohttp.ClientSession(headers={"Content-Type": "application/json"})
        app = web.Application()
        app.router.add_post("/", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        return f"http://{host}:{port}"

    async def stop(self) -> None:
        await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()


def _number(tag: Any) -> int:
    """A block tag's number (``latest`` and ``pending`` are never above a node's head)."""
    return int(tag, 16) if isinstance(tag, str) and tag.startswith("0x") else -1


def _at(param: Any, height: int) -> Any:
    return hex(height) if param == "latest" else param


def _block_of(result: dict[str, Any]) -> int:
    number = result.get("blockNumber", result.get("number"))
    return int(number, 16) if isinstance(number, str) else -1


async def wait_terminal(pool: Pool, action_id: int, timeout: float = 60.0) -> Any:
    """The action's row once it is confirmed or failed."""
    deadline = time.monotonic() + timeout
    while (row := await pool.fetchrow("SELECT * FROM actions WHERE id = $1", action_id))[
        "status"
    ] not in ("confirmed", "failed"):
        assert time.monotonic() < deadline, dict(row)
        await asyncio.sleep(0.1)
    return row


@pytest.fixture
async def lagging(
    make_settings: Callable[..., Settings], infra: dict[str, str]
) -> AsyncIterator[Callable[..., Any]]:
    """Starts a proxy in front of a chain's anvil; (the proxy, the chain's settings with
    the proxy as its only RPC URL)."""
    proxies: list[LaggingProxy] = []

    async def start(chain: Chain, **kw: Any) -> tuple[LaggingProxy, Settings]:
        proxy = LaggingProxy(chain.anvil.url, **kw)
        proxies.append(proxy)
        url = await proxy.start()
        return proxy, executor_settings(
            make_settings, infra=infra, name=chain.name, chain_id=chain.chain_id, url=url,
            usdc=chain.usdc,
        )  # fmt: skip

    yield start
    for proxy in proxies:
        await proxy.stop()


@pytest.mark.parametrize(
    "provider",
    [
        # a load balancer: each request lands on the up-to-date node or on one 3 behind
        {"behind": 3, "share": 0.5, "seed": 18},
        # a receipt index 3 blocks behind the head, all run (heads and counts are current)
        {"behind": 3, "share": 1.0, "only": frozenset({"eth_getTransactionReceipt"})},
    ],
    ids=["load_balancer", "receipt_index"],
)
async def test_recipients_are_paid_once_through_a_provider_that_lags(
    make_chain: Any, pool: Pool, settings: Settings, lagging: Any, provider: dict[str, Any]
) -> None:
    chain: Chain = await make_chain(block_time=0.5)
    proxy, lagged = await lagging(chain, **provider)
    relayer_nonce = await chain.nonce(chain.relayer)
    relayer_tokens = await chain.token_balance(chain.relayer)
    amounts = [1_000_003 + i for i in range(4)]
    recipients = ["0x" + f"{0x5B + i:02x}" * 20 for i in range(len(amounts) + 1)]
    prefills = [
        (await seed_action(
            pool, settings, chain, kind="prefill", token=chain.usdc, amount=amount,
            signer_kind="relayer", to=to,
        ))[0]
        for amount, to in zip(amounts, recipients, strict=False)
    ]  # fmt: skip
    refund, _, address = await seed_action(
        pool, settings, chain, kind="user_refund", token=chain.usdc, amount=2_000_011,
        signer_kind="intent", to=recipients[-1],
    )  # fmt: skip
    await chain.mint(address, 2_000_011)
    await chain.rpc.mine(4)  # the deposit is below what the lagging node shows

    running = Running(lagged, chain.name, pool)
    rows = [await wait_terminal(pool, a) for a in [*prefills, refund]]
    await running.finish()

    assert proxy.lagged > 10  # the lagging view was served
    for amount, to in zip(amounts, recipients, strict=False):
        assert await chain.token_balance(to) == amount, f"{to} got another amount than once"
    assert await chain.token_balance(recipients[-1]) == 2_000_011
    assert await chain.token_balance(chain.relayer) == relayer_tokens - sum(amounts)
    assert await chain.nonce(chain.relayer) == relayer_nonce + len(amounts)
    # nothing more on its way either: every transaction the node holds is mined
    assert await pending_nonce(chain, chain.relayer) == relayer_nonce + len(amounts)
    assert await chain.nonce(address) == 1
    for action_id, row in zip([*prefills, refund], rows, strict=True):
        assert (row["status"], row["attempts"]) == ("confirmed", 0), dict(row)
        txs = await transactions(pool, action_id)
        assert [t["status"] for t in txs if t["purpose"] == "transfer"] == ["confirmed"]
