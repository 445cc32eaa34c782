"""Trigger-processing credits native value only with a successful receipt (own anvil).

A transfer of ETH to an intent address that reverts (the address has code that
reverts, set with ``anvil_setCode`` on this test's own anvil) is included in a block
with receipt status 0; trigger-processing, which uses the poller's code, must not
record it. The same transfer once the code is gone is recorded. (The intent's
``tokenIn`` is the native coin: only then are blocks read in full.)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import pytest
from tests.conftest import chain_section
from tests.integration.poller_chain import section
from tests.support import new_intent

from intentd.adapters.postgres import Pool
from intentd.api.connections import Database
from intentd.api.processing import Processor
from intentd.lifecycle.chain_book import ChainBook
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devchain import DevChain, tx
from intentd_dev.devinfra.anvil import start_anvil

pytestmark = pytest.mark.integration
REVERTS = "0x60006000fd"  # PUSH1 0 PUSH1 0 REVERT


@pytest.fixture
async def own_base(
    infra: dict[str, str], make_settings: Callable[..., Settings]
) -> AsyncIterator[tuple[DevChain, Settings]]:
    anvil = await asyncio.to_thread(start_anvil, 84532)
    try:
        async with DevChain(anvil.url) as rpc:
            deployer = (await rpc.accounts())[0]
            usdc = await rpc.deploy_token(deployer, "Test USD Coin", "USDC", 6)
            usdt = await rpc.deploy_token(deployer, "Test Tether USD", "USDT", 6)
            settings = make_settings(
                chains={
                    "BASE_TESTNET": section(84532, [anvil.url], usdc, usdt),
                    "ARBITRUM_TESTNET": chain_section(infra, "ARBITRUM_TESTNET", 421614),
                }
            )
            yield rpc, settings
    finally:
        await asyncio.to_thread(anvil.stop)


async def send_eth(rpc: DevChain, to: str, value: int) -> tuple[str, int]:
    """Send ``value`` wei with a fixed gas limit (no estimate: it may revert); (hash, status)."""
    payer = (await rpc.accounts())[3]
    [tx_hash] = await rpc.send_many([tx(payer, to, value, gas=100_000)])
    for _ in range(200):
        receipt = await rpc.rpc("eth_getTransactionReceipt", tx_hash)
        if receipt is not None:
            return tx_hash, int(receipt["status"], 16)
        await asyncio.sleep(0.05)
    raise TimeoutError(f"{tx_hash} not mined")


async def test_trigger_processing_records_native_value_only_with_a_successful_receipt(
    pool: Pool, own_base: tuple[DevChain, Settings]
) -> None:
    rpc, settings = own_base
    row = await new_intent(pool, settings, chain="BASE_TESTNET", token=NATIVE_TOKEN, amount="1")
    address = row.intent_address
    await rpc.rpc("anvil_setCode", address, REVERTS)
    failed, status = await send_eth(rpc, address, 100 * 10**18)
    assert status == 0  # included, value not transferred
    await rpc.rpc("anvil_setCode", address, "0x")
    paid, status = await send_eth(rpc, address, 10**15)
    assert status == 1
    await rpc.mine(1)

    processor = Processor(
        settings, Database.of(settings, pool), book=ChainBook.of_settings(settings)
    )
    try:
        outcome = await processor.trigger(row, now=datetime.now(UTC))
    finally:
        await processor.close()
    assert [(d.deposit.tx_hash, d.deposit.token, d.deposit.amount) for d in outcome.deposits] == [
        (paid, NATIVE_TOKEN.lower(), 10**15)
    ]
    assert failed not in {d.deposit.tx_hash for d in outcome.deposits}
