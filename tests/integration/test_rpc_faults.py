"""The chaos run's RPC fault proxy against a real anvil: what each fault answers.

The lagging view is what a load-balanced provider's slower node, or a failover URL that
is a stale copy, answers: every rewrite is checked here against the honest node behind
the proxy (the head, block and receipt reads above the view's head, state reads at a
block it does not have, ``eth_getLogs`` cut at its head), and that raw transactions
still reach the node.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from eth_account import Account

from intentd.adapters.evm.json_rpc import JsonRpcClient, RangeLimitError, RpcError
from intentd_dev.devchain import MINT, DevChain, call_data
from intentd_dev.devinfra.accounts import Role, dev_account
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil
from intentd_dev.rpc_faults import RpcFaultProxy

pytestmark = pytest.mark.integration

TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


@pytest.fixture(scope="module")
async def node() -> AsyncIterator[tuple[AnvilProcess, DevChain, str, list[str]]]:
    """An automining anvil with a token and 8 blocks that each hold one mint (a log)."""
    anvil = await asyncio.to_thread(start_anvil, 777_031)
    async with DevChain(anvil.url) as chain:
        deployer = dev_account(Role.DEPLOYER).address
        token = await chain.deploy_token(deployer, "Test", "TST", 6)
        mints = []
        for n in range(8):
            mints.append(await chain.send(deployer, token, data=call_data(MINT, deployer, n + 1)))
        yield anvil, chain, token, mints
    await asyncio.to_thread(anvil.stop)


@pytest.fixture
async def proxy(
    node: tuple[AnvilProcess, DevChain, str, list[str]],
) -> AsyncIterator[RpcFaultProxy]:
    instance = RpcFaultProxy(node[0].url, seed=7, hang_seconds=2)
    await instance.start()
    yield instance
    await instance.close()


async def post(url: str, body: Any, timeout: float = 10) -> tuple[int, dict[str, str], Any]:
    async with (
        aiohttp.ClientSession(headers={"Content-Type": "application/json"}) as session,
        session.post(url, data=orjson.dumps(body), timeout=aiohttp.ClientTimeout(timeout)) as r,
    ):
        raw = await r.read()
        try:
            return r.status, dict(r.headers), orjson.loads(raw)
        except orjson.JSONDecodeError:
            return r.status, dict(r.headers), raw


async def batch(url: str, *calls: tuple[str, list[Any]]) -> list[dict[str, Any]]:
    body = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(calls)]
    status, _, answer = await post(url, body)
    assert status == 200, answer
    assert [item["id"] for item in answer] == list(range(len(calls)))
    return list(answer)


def results(answers: list[dict[str, Any]]) -> list[Any]:
    return [item.get("result", item.get("error")) for item in answers]


async def self_transfer(chain: DevChain) -> tuple[str, str]:
    """A signed transfer of 1 wei to itself by a new, funded account, not sent: the raw
    transaction (hex) and its hash."""
    payer = Account.create()
    await chain.rpc("anvil_setBalance", payer.address, hex(10**18))
    signed = payer.sign_transaction(
        {
            "to": payer.address,
            "value": 1,
            "gas": 21_000,
            "nonce": 0,
            "chainId": 777_031,
            "maxFeePerGas": 10**10,
            "maxPriorityFeePerGas": 10**9,
        }
    )
    return "0x" + signed.raw_transaction.hex(), "0x" + signed.hash.hex()


async def test_without_a_burst_every_answer_is_the_nodes(
    node: tuple[AnvilProcess, DevChain, str, list[str]], proxy: RpcFaultProxy
) -> None:
    anvil, _, _, mints = node
    calls = [("eth_blockNumber", []), ("eth_getTransactionReceipt", [mints[-1]])]
    assert results(await batch(proxy.url, *calls)) == results(await batch(anvil.url, *calls))
    status, _, single = await post(
        proxy.url, {"jsonrpc": "2.0", "id": "a", "method": "eth_chainId"}
    )
    assert status == 200 and single == {"jsonrpc": "2.0", "id": "a", "result": hex(777_031)}
    assert proxy.served["forwarded"] == 2


async def test_a_lagging_node_answers_as_a_node_k_blocks_behind(
    node: tuple[AnvilProcess, DevChain, str, list[str]], proxy: RpcFaultProxy
) -> None:
    _, chain, token, mints = node
    head = await chain.block_number()
    proxy.burst("lag", 60, share=1.0, blocks=3)
    top = head - 3
    deployer = dev_account(Role.DEPLOYER).address
    (
        number,
        latest,
        above,
        at_top,
        receipt_above,
        receipt_at_top,
        tx_above,
        nonce_above,
        nonce_latest,
        logs,
        logs_above,
    ) = results(
        await batch(
            proxy.url,
            ("eth_blockNumber", []),
            ("eth_getBlockByNumber", ["latest", False]),
            ("eth_getBlockByNumber", [hex(head), False]),
            ("eth_getBlockByNumber", [hex(top), False]),
            ("eth_getTransactionReceipt", [mints[-1]]),  # in the head block
            ("eth_getTransactionReceipt", [mints[-4]]),  # in head - 3
            ("eth_getTransactionByHash", [mints[-1]]),
            ("eth_getTransactionCount", [deployer, hex(head)]),
            ("eth_getTransactionCount", [deployer, "latest"]),
            ("eth_getLogs", [{"address": token, "fromBlock": hex(head - 5), "toBlock": "latest"}]),
            ("eth_getLogs", [{"address": token, "fromBlock": hex(top + 1), "toBlock": hex(head)}]),
        )
    )
    assert int(number, 16) == top
    assert int(latest["number"], 16) == top
    assert above is None and int(at_top["number"], 16) == top
    assert receipt_above is None and int(receipt_at_top["blockNumber"], 16) == top
    assert tx_above is None
    assert nonce_above == {"code": -32000, "message": "header not found"}
    honest_nonce = await chain.rpc("eth_getTransactionCount", deployer, hex(top))
    assert (
        nonce_latest
        == honest_nonce
        != await chain.rpc("eth_getTransactionCount", deployer, "latest")
    )
    assert [int(log["blockNumber"], 16) for log in logs] == [head - 5, head - 4, head - 3]
    assert logs_above == []  # silently: no error says the answer is short
    assert proxy.served["lagging"] == 1


async def test_a_load_balanced_provider_lands_some_calls_on_the_lagging_node(
    node: tuple[AnvilProcess, DevChain, str, list[str]], proxy: RpcFaultProxy
) -> None:
    _, chain, _, _ = node
    head = await chain.block_number()
    proxy.burst("lag", 60, share=0.5, blocks=2)
    seen = {
        int((await batch(proxy.url, ("eth_blockNumber", [])))[0]["result"], 16) for _ in range(40)
    }
    assert seen == {head, head - 2}


async def test_receipts_trail_the_blocks_they_are_in(
    node: tuple[AnvilProcess, DevChain, str, list[str]], proxy: RpcFaultProxy
) -> None:
    _, chain, _, mints = node
    head = await chain.block_number()
    proxy.burst("receipts", 60, blocks=2)
    number, block, newest, second, third = results(
        await batch(
            proxy.url,
            ("eth_blockNumber", []),
            ("eth_getBlockByNumber", [hex(head), False]),
            ("eth_getTransactionReceipt", [mints[-1]]),
            ("eth_getTransactionReceipt", [mints[-2]]),
            ("eth_getTransactionReceipt", [mints[-3]]),
        )
    )
    assert int(number, 16) == head and mints[-1] in block["transactions"]
    assert newest is None and second is None
    assert third["transactionHash"] == mints[-3]


async def test_a_stale_copy_is_always_behind_and_still_broadcasts(
    node: tuple[AnvilProcess, DevChain, str, list[str]],
) -> None:
    anvil, chain, _, _ = node
    stale = RpcFaultProxy(anvil.url, lag=3)
    await stale.start()
    try:
        head = await chain.block_number()
        [number] = results(await batch(stale.url, ("eth_blockNumber", [])))
        assert int(number, 16) == head - 3
        raw, _ = await self_transfer(chain)
        [sent] = results(await batch(stale.url, ("eth_sendRawTransaction", [raw])))
        assert (await chain.receipt(sent))["status"] == "0x1"
        [receipt] = results(await batch(stale.url, ("eth_getTransactionReceipt", [sent])))
        assert receipt is None  # mined in the head block: not on the stale copy yet
    finally:
        await stale.close()


async def test_http_errors_are_500_502_or_429_with_retry_after(proxy: RpcFaultProxy) -> None:
    proxy.burst("http", 60)
    statuses = set()
    for _ in range(30):
        status, headers, _ = await post(
            proxy.url, [{"jsonrpc": "2.0", "id": 0, "method": "eth_chainId"}]
        )
        statuses.add(status)
        if status == 429:
            assert headers["Retry-After"] == "1"
    assert statuses == {500, 502, 429}


async def test_rpc_errors_are_header_not_found_and_limit_exceeded(
    node: tuple[AnvilProcess, DevChain, str, list[str]], proxy: RpcFaultProxy
) -> None:
    _, _, token, _ = node
    proxy.burst("rpc_error", 60)
    client = JsonRpcClient("TEST", [proxy.url], attempts=1)
    try:
        with pytest.raises(RangeLimitError):
            await client.call(
                "eth_getLogs", [{"address": token, "fromBlock": "0x1", "toBlock": "0x1"}]
            )
        with pytest.raises(RpcError, match="header not found"):
            await client.call("eth_getBlockByNumber", ["0x1", False])
        assert await client.call("eth_chainId", []) == hex(777_031)  # names no block
    finally:
        await client.close()


async def test_a_hang_outlasts_the_clients_timeout(proxy: RpcFaultProxy) -> None:
    proxy.burst("hang", 60)
    with pytest.raises(TimeoutError):
        await post(proxy.url, [{"jsonrpc": "2.0", "id": 0, "method": "eth_chainId"}], timeout=0.5)


async def test_a_reset_mid_answer_loses_the_answer_not_the_transaction(
    node: tuple[AnvilProcess, DevChain, str, list[str]], proxy: RpcFaultProxy
) -> None:
    _, chain, _, _ = node
    raw, tx_hash = await self_transfer(chain)
    proxy.burst("reset", 60)
    with pytest.raises(aiohttp.ClientError):
        await post(
            proxy.url,
            [{"jsonrpc": "2.0", "id": 0, "method": "eth_sendRawTransaction", "params": [raw]}],
        )
    assert (await chain.receipt(tx_hash))["status"] == "0x1"
    assert proxy.served["reset"] == 1


async def test_a_burst_ends_by_itself(proxy: RpcFaultProxy) -> None:
    proxy.burst("http", 0.3)
    assert proxy.active() == ["http"]
    deadline = asyncio.get_running_loop().time() + 10
    while proxy.active():
        assert asyncio.get_running_loop().time() < deadline, "the burst did not end"
        await asyncio.sleep(0.05)
    status, _, answer = await post(
        proxy.url, [{"jsonrpc": "2.0", "id": 0, "method": "eth_chainId"}]
    )
    assert status == 200 and answer[0]["result"] == hex(777_031)


async def test_a_lagging_node_does_not_have_a_newer_block_named_by_its_hash(
    node: tuple[AnvilProcess, DevChain, str, list[str]], proxy: RpcFaultProxy
) -> None:
    _, chain, _, _ = node
    head = await chain.block_number()
    newest = await chain.rpc("eth_getBlockByNumber", hex(head), False)
    older = await chain.rpc("eth_getBlockByNumber", hex(head - 3), False)
    deployer = dev_account(Role.DEPLOYER).address
    proxy.burst("lag", 60, share=1.0, blocks=3)
    at_newest, at_older, block = results(
        await batch(
            proxy.url,
            ("eth_getBalance", [deployer, {"blockHash": newest["hash"]}]),
            ("eth_getBalance", [deployer, {"blockHash": older["hash"]}]),
            ("eth_getBlockByHash", [newest["hash"], False]),
        )
    )
    assert at_newest == {"code": -32000, "message": "header not found"}
    assert at_older == await chain.rpc("eth_getBalance", deployer, hex(head - 3))
    assert block is None
