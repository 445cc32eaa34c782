"""Slippage on a real chain: an intent of 30 USD paid in ETH, priced by a mock Chainlink
feed on an anvil of this test, paid in real ETH after the feed moved, credited by
trigger-processing (which scans the chain and credits through the lifecycle's service)
at the prices the API's refresher read from the feed, on real PostgreSQL.

The money rule of issue 20: a payment of the quoted total after a 10 % drop with 1 %
slippage must not fund the intent (the 30 USD owed are worth more ETH now): it is
under-funded by the difference, a top-up of it completes it, and without one it is
refunded at expiry.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from uuid import UUID

import pytest
from tests.conftest import chain_section
from tests.integration.poller_chain import section
from tests.lifecycle_calls import Outcome, expire
from tests.support import PAYEE

from intentd.adapters.evm.price_feeds import running_prices
from intentd.adapters.postgres import Pool, intent_store
from intentd.adapters.postgres.intent_inserts import PostgresIntentStore
from intentd.api.connections import Database
from intentd.api.processing import Processor
from intentd.contract.record import IntentRow
from intentd.custody import IntentKeys
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.intents.service import IntentRequest, create_intent
from intentd.intents.writer import IntentWriter
from intentd.lifecycle.chain_book import ChainBook
from intentd.pricing.cache import FeedPrices
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devchain import DevChain
from intentd_dev.devinfra import feeds
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil
from intentd_dev.devinfra.contracts import aggregator_artifact, connect

pytestmark = pytest.mark.integration

_names = itertools.count(1)
ETH_FEED = feeds.feed_address("ETH")
PRINCIPAL_AT_2700 = 11_111_111_111_111_112  # 30 USD at 2,700 USD, rounded up to the wei


@dataclass
class Chain:
    name: str
    anvil: AnvilProcess
    rpc: DevChain
    payer: str
    settings: Settings
    prices: FeedPrices
    processor: Processor

    async def price(self, usd: str) -> None:
        """Move the feed, and wait until the refresher has read it."""

        def move() -> None:
            with connect(self.anvil.url) as w3:
                feeds.set_price(w3, ETH_FEED, Decimal(usd))

        await asyncio.to_thread(move)
        deadline = time.monotonic() + 20
        while True:
            found = self.prices.usd_price("ETH", "test")
            if found is not None and found.usd == Decimal(usd):
                return
            assert time.monotonic() < deadline, f"the feed was not read at {usd}"
            await asyncio.sleep(0.1)

    async def pay(self, intent: IntentRow, wei: int) -> None:
        await self.rpc.receipt(await self.rpc.send(self.payer, intent.intent_address, value=wei))
        await self.rpc.mine(2)  # confirmations = 1

    async def trigger(self, intent: IntentRow) -> IntentRow:
        return (await self.processor.trigger(intent, now=datetime.now(UTC))).intent


@pytest.fixture
async def chain(
    infra: dict[str, str], make_settings: Callable[..., Settings], pool: Pool
) -> AsyncIterator[Chain]:
    number = next(_names)
    name, chain_id = f"SLIPPAGE_{number}", 981_100 + number
    anvil = await asyncio.to_thread(start_anvil, chain_id)
    try:

        def place() -> None:
            with connect(anvil.url) as w3:
                feeds.ensure_feeds(w3, aggregator_artifact())
                feeds.set_price(w3, ETH_FEED, Decimal(3000))

        await asyncio.to_thread(place)
        async with DevChain(anvil.url) as rpc, AsyncExitStack() as stack:
            deployer, payer = (await rpc.accounts())[:2]
            usdc = await rpc.deploy_token(deployer, "Test USD Coin", "USDC", 6)
            usdt = await rpc.deploy_token(deployer, "Test Tether USD", "USDT", 6)
            feed = {"address": ETH_FEED, "heartbeat": 3600, "min": "100", "max": "100000"}
            settings = make_settings(
                chains={
                    name: section(
                        chain_id, [anvil.url], usdc, usdt,
                        native={"symbol": "ETH", "name": "Ether", "decimals": 18,
                                "category": "major", "price_feed": feed},
                    ),
                    "ARBITRUM_TESTNET": chain_section(infra, "ARBITRUM_TESTNET", 421614),
                },
                fees={"app_fee_bps": "100"},
                pricing={"refresh_interval": 0.2, "max_read_age": 5},
                api={"trigger_cooldown": 0},
            )  # fmt: skip
            prices = await stack.enter_async_context(running_prices(settings))
            processor = Processor(
                settings,
                Database.of(settings, pool),
                prices=prices,
                book=ChainBook.of_settings(settings),
            )
            stack.push_async_callback(processor.close)
            yield Chain(name, anvil, rpc, payer, settings, prices, processor)
    finally:
        await asyncio.to_thread(anvil.stop)


async def usd_intent(chain: Chain, pool: Pool, *, expires_in: int | None = None) -> IntentRow:
    """30 USD paid in ETH on the test's chain, at the feed's price now."""
    return await create_intent(
        chain.settings,
        IntentWriter(PostgresIntentStore(pool), IntentKeys(chain.settings.mnemonic())),
        IntentRequest(
            amount="30",
            amount_symbol="USD",
            token_in=NATIVE_TOKEN,
            source_chain=chain.name,
            destination_chain="ARBITRUM_TESTNET",
            recipient=PAYEE,
            refund_address=PAYEE,
            expires_in=expires_in,
        ),
        client_id=UUID(chain.settings.intents.default_client_id),
        now=datetime.now(UTC),
        prices=chain.prices,
    )


async def prefills(pool: Pool, intent_id: int) -> list[int]:
    rows = await pool.fetch(
        "SELECT amount FROM actions WHERE intent_id = $1 AND kind = 'prefill' ORDER BY id",
        intent_id,
    )
    return [int(r["amount"]) for r in rows]


async def test_an_eth_payment_after_a_ten_percent_drop_is_underfunded_and_a_top_up_completes_it(
    chain: Chain, pool: Pool
) -> None:
    intent = await usd_intent(chain, pool)
    assert (intent.total_due, intent.amount_out) == (10**16 + 10**14, 10**16)
    assert intent.slippage == Decimal("0.01") and intent.owed_symbol == "USD"
    assert intent.prices is not None and intent.prices[0]["usd"] == "3000"
    assert intent.prices[0]["feed"] == f"{chain.name}:{ETH_FEED}"
    await chain.price("2700")

    await chain.pay(intent, intent.total_due)
    paid = await chain.trigger(intent)
    assert (paid.status, paid.funding_status) == (IntentStatus.PENDING, FundingStatus.UNDERFUNDED)
    assert paid.total_due == PRINCIPAL_AT_2700 + 10**14
    assert await prefills(pool, intent.id) == []  # nothing the relayer would pay for
    valued = await pool.fetchval("SELECT valuation FROM deposits WHERE intent_id = $1", intent.id)
    assert '"token_in_usd": "2700"' in valued

    await chain.pay(intent, paid.total_due - paid.received)  # the top-up
    done = await chain.trigger(intent)
    assert (done.status, done.funding_status) == (IntentStatus.FUNDED, FundingStatus.EXACT)
    assert await prefills(pool, intent.id) == [PRINCIPAL_AT_2700]


async def test_without_a_top_up_it_is_refunded_at_expiry(chain: Chain, pool: Pool) -> None:
    intent = await usd_intent(chain, pool, expires_in=60)
    await chain.price("2700")
    await chain.pay(intent, intent.total_due)
    assert (await chain.trigger(intent)).status is IntentStatus.PENDING
    async with pool.acquire() as conn:
        later = intent.expires_at + timedelta(seconds=1)
        assert await expire(conn, chain.settings, intent.id, now=later) is Outcome.EXPIRED
    row = await intent_store.get_by_id(pool, intent.id)
    assert row is not None and row.status is IntentStatus.REFUNDING
    refunds = await pool.fetch(
        "SELECT amount, reason FROM actions WHERE intent_id = $1 AND kind = 'user_refund'",
        intent.id,
    )
    assert [(int(r["amount"]), r["reason"]) for r in refunds] == [(intent.total_due, "expired")]


async def test_a_drop_within_the_slippage_is_prefilled_in_full(chain: Chain, pool: Pool) -> None:
    intent = await usd_intent(chain, pool)
    await chain.price("2985")
    await chain.pay(intent, intent.total_due)
    paid = await chain.trigger(intent)
    assert (paid.status, paid.total_due) == (IntentStatus.FUNDED, intent.total_due)
    assert await prefills(pool, intent.id) == [10_050_251_256_281_408]  # 30 USD at 2,985
    assert paid.valuation is not None and paid.valuation["relayer_bears"] == 50_251_256_281_408
