"""The poller on a real anvil behind a provider that lags or refuses: a load balancer
whose requests land at random (seeded) on the head node or on a node ``LAG`` blocks
behind (so ``eth_blockNumber`` alternates between the head and head - ``LAG``,
``eth_getLogs`` is silently cut at the lagging node's head, its blocks and receipts
above it are null), and a provider that refuses every ``eth_getLogs`` with ``-32005
limit exceeded``, one block included.

Every deposit must be published exactly once, none retracted. The proxy is a small
aiohttp application inside the test, in front of the test's own anvil.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp import ClientSession, web
from tests.integration.poller_chain import Chain, chain_fixture, served_rpc
from tests.integration.test_poller import (  # noqa: F401 - polling is a fixture
    TopicReader,
    intent_address,
    polling,
    to,
    wait_for_cursor,
)

from intentd.adapters.postgres import Pool
from intentd.chain.evm.decoding import NATIVE
from intentd.settings import Settings
from intentd_dev.devchain import MINT, TRANSFER, call_data

pytestmark = pytest.mark.integration

LAG = 3


class FaultyProvider:
    """A JSON-RPC proxy in front of anvil: a third of the POSTs (at random, seeded)
    answered as a node ``lag`` blocks behind would answer them; with ``refuse_logs``,
    every ``eth_getLogs`` refused."""

    def __init__(self, upstream: str, *, lag: int = 0, refuse_logs: bool = False) -> None:
        self.upstream = upstream
        self.lag = lag
        self.refuse_logs = refuse_logs
        self.turns = random.Random(1804)
        self.share = 0.35
        self.lagging_posts = 0
        self.cut_log_queries = 0
        self.refused = 0
        self.url = ""
        """Where it listens, once served."""
        self._session: ClientSession | None = None

    async def forward(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self._session is None:
            self._session = ClientSession(headers={"Content-Type": "application/json"})
        async with self._session.post(self.upstream, data=orjson.dumps(calls)) as response:
            answers: list[dict[str, Any]] = orjson.loads(await response.read())
        return answers

    async def handle(self, request: web.Request) -> web.Response:
        calls = orjson.loads(await request.read())
        single = isinstance(calls, dict)
        calls = [calls] if single else calls
        lagging = self.lag > 0 and self.turns.random() < self.share
        view: int | None = None
        if lagging:
            self.lagging_posts += 1
            [head] = await self.forward([_call(0, "eth_blockNumber", [])])
            view = int(head["result"], 16) - self.lag
        answers = [await self._answer(call, view) for call in calls]
        return web.json_response(answers[0] if single else answers)

    async def _answer(self, call: dict[str, Any], view: int | None) -> dict[str, Any]:
        method, params, id_ = call["method"], call.get("params", []), call.get("id")
        if method == "eth_getLogs" and self.refuse_logs:
            self.refused += 1
            return {
                "jsonrpc": "2.0",
                "id": id_,
                "error": {"code": -32005, "message": "limit exceeded"},
            }
        if view is None:
            [answer] = await self.forward([call])
            return answer
        if method == "eth_blockNumber":
            return _result(id_, hex(view))
        numbered = method in ("eth_getBlockByNumber", "eth_getBlockReceipts")
        if numbered and params[0].startswith("0x") and int(params[0], 16) > view:
            return _result(id_, None)
        if method == "eth_getLogs" and "toBlock" in params[0]:
            query = dict(params[0])
            if int(query["fromBlock"], 16) > view:
                self.cut_log_queries += 1
                return _result(id_, [])
            if int(query["toBlock"], 16) > view:
                self.cut_log_queries += 1
                query["toBlock"] = hex(view)  # older geth: cut at its head, say nothing
            call = {**call, "params": [query]}
        [answer] = await self.forward([call])
        found = answer.get("result") if method == "eth_getTransactionReceipt" else None
        if found and int(found["blockNumber"], 16) > view:
            return _result(id_, None)
        return answer

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def _call(id_: int, method: str, params: list[Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def _result(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


# test_poller's chain, under names of this module's own (a chain's cursor is kept in the
# session's database by name)
chain = chain_fixture("LAGTEST", 980_000)


@pytest.fixture
async def proxy(chain: Chain) -> AsyncIterator[FaultyProvider]:
    provider = FaultyProvider(chain.anvil.url)
    async with served_rpc(provider.handle) as provider.url:
        yield provider
    await provider.close()


Paid = tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], list[str]]
"""What paying and polling through the proxy found: the messages published to each
address, and the payments' transaction hashes."""


@pytest.fixture
def through_proxy(  # noqa: PLR0917 - the fixtures it runs with
    chain: Chain,
    pool: Pool,
    settings: Settings,
    infra: dict[str, str],
    polling: Any,  # noqa: F811
    proxy: FaultyProvider,
) -> Callable[[], Awaitable[Paid]]:
    """Pay and poll with the poller reading through the proxy."""

    async def pay_and_poll() -> Paid:
        """Ten token and ten native payments made while the poller runs."""
        a, b = await intent_address(pool, settings), await intent_address(pool, settings)
        rpc = chain.rpc
        await rpc.send(chain.payer, chain.usdt, data=call_data(MINT, chain.payer, 10**12))
        running = polling(
            chain, chain.configure(rpc_urls=[proxy.url], batch_size=4, confirmations=1)
        )
        tokens, natives = [], []
        # each paid once the poller is at the head: it reads the newest blocks
        for n in range(10):
            await wait_for_cursor(pool, chain.name, await rpc.block_number(), limit=60)
            tokens.append(
                await rpc.send(chain.payer, chain.usdt, data=call_data(TRANSFER, a, 100 + n))
            )
            natives.append(await rpc.send(chain.payer, b, value=10**12 + n))
        await rpc.mine(LAG)
        await wait_for_cursor(pool, chain.name, await rpc.block_number(), limit=60)
        async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
            # The cursor is past every payment: what is published is all there will be.
            await reader.wait_for(lambda ms: len(to(b)(ms)) >= 10 or len(to(a)(ms)) >= 10)
            await reader.read_to_end()  # all that was published (not what 1 s reads)
            to_a, to_b = to(a)(reader.messages), to(b)(reader.messages)
        await running.finish()
        return to_a, to_b, tokens, natives

    return pay_and_poll


async def test_a_load_balanced_provider_with_a_lagging_node_loses_no_deposit(
    chain: Chain, proxy: FaultyProvider, through_proxy: Callable[[], Awaitable[Paid]]
) -> None:
    proxy.lag = LAG
    to_a, to_b, tokens, natives = await through_proxy()
    assert [m["kind"] for m in to_a + to_b] == ["deposit"] * 20  # none retracted
    assert [(m["tx_hash"], m["token"]) for m in to_a] == [(t, chain.usdt) for t in tokens]
    assert [(m["tx_hash"], m["token"]) for m in to_b] == [(t, NATIVE) for t in natives]
    assert proxy.lagging_posts > 10 and proxy.cut_log_queries > 0  # the lag was met


async def test_a_provider_refusing_every_log_query_loses_no_deposit(
    proxy: FaultyProvider, through_proxy: Callable[[], Awaitable[Paid]]
) -> None:
    proxy.refuse_logs = True  # "-32005 limit exceeded", one block too
    to_a, to_b, tokens, natives = await through_proxy()
    assert [m["tx_hash"] for m in to_a] == tokens  # read from the blocks' receipts
    assert [m["tx_hash"] for m in to_b] == natives
    assert proxy.refused > 0
