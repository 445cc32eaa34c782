"""What one trigger-processing call asks of the chain's node (own anvil, RPC calls counted).

A call is an amplifier if it reads more than its intent needs: a token intent is
scanned with ``eth_getLogs`` filtered by its address as recipient (never full
blocks), a terminal intent is answered from the store (no RPC at all), a second call
for one intent within the cooldown is refused, and a call has a deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from tests.conftest import chain_section
from tests.integration.poller_chain import section
from tests.support import new_intent

from intentd.adapters.evm.json_rpc import HttpTransport
from intentd.adapters.postgres import Pool
from intentd.api.connections import Database
from intentd.api.processing import Processor
from intentd.api.trigger_gate import TriggerRefused
from intentd.chain.errors import ChainUnavailable
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devchain import MINT, DevChain, call_data, disperse_data
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil

pytestmark = pytest.mark.integration
NAME, CHAIN_ID = "TRIGREADS", 985_001
OTHER = "0x00000000000000000000000000000000000000aa"


@dataclass
class Chain:
    anvil: AnvilProcess
    rpc: DevChain
    payer: str
    usdc: str
    usdt: str
    disperse: str
    settings: Settings


class Posts:
    """Every JSON-RPC call this process sends, as (method, params)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[Any]]] = []

    def methods(self) -> Counter[str]:
        return Counter(method for method, _ in self.calls)


@pytest.fixture
def posts(monkeypatch: pytest.MonkeyPatch) -> Posts:
    seen = Posts()
    post = HttpTransport.post

    async def counted(self: HttpTransport, url: str, body: bytes, seconds: float) -> Any:
        seen.calls.extend((call["method"], call["params"]) for call in orjson.loads(body))
        return await post(self, url, body, seconds)

    monkeypatch.setattr(HttpTransport, "post", counted)
    return seen


@pytest.fixture
async def chain(
    infra: dict[str, str], make_settings: Callable[..., Settings]
) -> AsyncIterator[Chain]:
    anvil = await asyncio.to_thread(start_anvil, CHAIN_ID)
    try:
        async with DevChain(anvil.url) as rpc:
            deployer, payer = (await rpc.accounts())[:2]
            usdc = await rpc.deploy_token(deployer, "Test USD Coin", "USDC", 6)
            usdt = await rpc.deploy_token(deployer, "Test Tether USD", "USDT", 6)
            disperse = await rpc.deploy_disperse(deployer)
            settings = make_settings(
                chains={
                    NAME: section(CHAIN_ID, [anvil.url], usdc, usdt),
                    "ARBITRUM_TESTNET": chain_section(infra, "ARBITRUM_TESTNET", 421614),
                },
                api={"trigger_cooldown": 30},
            )
            yield Chain(anvil, rpc, payer, usdc, usdt, disperse, settings)
    finally:
        await asyncio.to_thread(anvil.stop)


@pytest.fixture
async def processor(chain: Chain, pool: Pool) -> AsyncIterator[Processor]:
    found = Processor(
        chain.settings,
        Database.of(chain.settings, pool),
        book=ChainBook.of_settings(chain.settings),
    )
    yield found
    await found.close()


def padded(address: str) -> str:
    return "0x" + address.lower()[2:].rjust(64, "0")


async def test_a_token_intent_is_scanned_with_logs_filtered_by_its_address(
    chain: Chain, pool: Pool, processor: Processor, posts: Posts
) -> None:
    row = await new_intent(pool, chain.settings, chain=NAME)
    address = row.intent_address
    # Noise the poller's read would carry: transfers to others, in many blocks.
    for _ in range(5):
        await chain.rpc.send(chain.payer, chain.usdc, data=call_data(MINT, OTHER, 7))
    # One transaction whose first Transfer log goes to someone else: the intent's
    # transfers are the 2nd and 3rd of USDC's logs in it (their transfer_index, as the
    # poller numbers them), and a wrong-token deposit (USDT) owed back.
    dispersed = await chain.rpc.send(
        chain.payer, chain.disperse, data=disperse_data(chain.usdc, [OTHER, address, address])
    )
    wrong = await chain.rpc.send(chain.payer, chain.usdt, data=call_data(MINT, address, 5))
    await chain.rpc.mine(300)

    outcome = await processor.trigger(row, now=datetime.now(UTC))

    found = sorted(
        (d.deposit.tx_hash, d.deposit.token, d.deposit.transfer_index, d.deposit.amount)
        for d in outcome.deposits
    )
    assert found == sorted(
        [
            (dispersed, chain.usdc, 1, 1),
            (dispersed, chain.usdc, 2, 1),
            (wrong, chain.usdt, 0, 5),
        ]
    )
    assert outcome.progress is not None and outcome.progress.scanned_to == outcome.confirmed_head
    methods = posts.methods()
    full_blocks = [p for m, p in posts.calls if m == "eth_getBlockByNumber" and p[1] is True]
    assert full_blocks == []
    for method, [*params] in posts.calls:
        if method == "eth_getLogs":
            [query] = params
            single_block = query["fromBlock"] == query["toBlock"]
            assert single_block or query["topics"][2] == padded(address), query
    assert sum(methods.values()) < 40, methods


async def test_a_native_intent_reads_full_blocks_but_token_logs_filtered_by_its_address(
    chain: Chain, pool: Pool, processor: Processor, posts: Posts
) -> None:
    row = await new_intent(pool, chain.settings, chain=NAME, token=NATIVE_TOKEN, amount="0.001")
    await chain.rpc.send(chain.payer, chain.usdc, data=call_data(MINT, OTHER, 7))
    paid = await chain.rpc.send(chain.payer, row.intent_address, value=10**15)
    await chain.rpc.mine(2)

    outcome = await processor.trigger(row, now=datetime.now(UTC))

    assert [d.deposit.tx_hash for d in outcome.deposits] == [paid]
    for method, [*params] in posts.calls:
        if method == "eth_getLogs":
            [query] = params
            single_block = query["fromBlock"] == query["toBlock"]
            assert single_block or query["topics"][2] == padded(row.intent_address), query


async def test_a_terminal_intent_is_answered_from_the_store_without_rpc(
    chain: Chain, pool: Pool, processor: Processor, posts: Posts
) -> None:
    row = await new_intent(pool, chain.settings, chain=NAME)
    await pool.execute("UPDATE intents SET status = 'EXPIRED' WHERE id = $1", row.id)
    row = replace(row, status=IntentStatus.EXPIRED)
    expired = await processor.trigger(row, now=datetime.now(UTC))
    assert posts.calls == []
    assert expired.intent.status is IntentStatus.EXPIRED
    assert expired.balance is None and expired.progress is None


async def test_a_second_call_for_an_intent_within_the_cooldown_is_refused(
    chain: Chain, pool: Pool, processor: Processor, posts: Posts
) -> None:
    row = await new_intent(pool, chain.settings, chain=NAME)
    await processor.trigger(row, now=datetime.now(UTC))
    calls = len(posts.calls)
    with pytest.raises(TriggerRefused) as refused:
        await processor.trigger(row, now=datetime.now(UTC))
    assert refused.value.code == "trigger_cooldown"
    assert 1 <= refused.value.retry_after <= 30
    assert len(posts.calls) == calls  # refused before any read
    other = await new_intent(pool, chain.settings, chain=NAME)
    await processor.trigger(other, now=datetime.now(UTC))  # another intent is not held up


async def test_a_call_whose_node_does_not_answer_ends_at_the_deadline(
    chain: Chain, pool: Pool, make_settings: Callable[..., Settings], infra: dict[str, str]
) -> None:
    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client hangs up
        writer.close()

    silent = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    settings = make_settings(
        chains={
            NAME: section(
                CHAIN_ID, [f"http://127.0.0.1:{port}"], chain.usdc, chain.usdt, rpc_timeout=60
            ),
            "ARBITRUM_TESTNET": chain_section(infra, "ARBITRUM_TESTNET", 421614),
        },
        api={"trigger_timeout": 1},
    )
    row = await new_intent(pool, settings, chain=NAME)
    processor = Processor(
        settings, Database.of(settings, pool), book=ChainBook.of_settings(settings)
    )
    started = time.monotonic()
    try:
        with pytest.raises(ChainUnavailable):
            await processor.trigger(row, now=datetime.now(UTC))
    finally:
        await processor.close()
        silent.close()
        await silent.wait_closed()
    assert time.monotonic() - started < 5
