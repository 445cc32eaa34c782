"""A lifecycle killed between the revaluation of a payment and its commit loses nothing
and doubles nothing: the daemon (``config/local.toml``: ETH priced by the dev chains' mock
feed) dies at ``lifecycle.after_revaluation``, nothing of the credit is stored, and the
restarted daemon credits the redelivered deposit once, at the prices it records with it.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from uuid import UUID

import orjson
import pytest
from tests.support import PAYEE, daemon_env, produce, start_daemon, wait_exit

from intentd.adapters.postgres import Pool, intent_store
from intentd.adapters.postgres.intent_inserts import PostgresIntentStore
from intentd.custody import IntentKeys
from intentd.domain.valuation import Rate, revalue
from intentd.faults import CRASH_EXIT_CODE
from intentd.intents.service import IntentRequest, create_intent
from intentd.intents.writer import IntentWriter
from intentd.messages import DepositMessage, deposit_id, deposits_topic, encode
from intentd.pricing import StaticPrices
from intentd.settings import NATIVE_TOKEN, Settings

pytestmark = pytest.mark.integration
CHAIN = "BASE_TESTNET"


async def test_a_crash_between_revaluation_and_commit_credits_once_at_the_recorded_prices(
    pool: Pool, isolated_settings: Settings, tmp_path: Path
) -> None:
    settings = isolated_settings
    intent = await create_intent(
        settings,
        IntentWriter(PostgresIntentStore(pool), IntentKeys(settings.mnemonic())),
        IntentRequest(
            amount="30", amount_symbol="USD", token_in=NATIVE_TOKEN, source_chain=CHAIN,
            destination_chain="ARBITRUM_TESTNET", recipient=PAYEE, refund_address=PAYEE,
        ),
        client_id=UUID(settings.intents.default_client_id),
        now=datetime.now(UTC),
        prices=StaticPrices({"ETH": Decimal(3300)}),  # the feed reads about 3,000: a drop
    )  # fmt: skip
    tx = "0x" + secrets.token_hex(32)
    native = NATIVE_TOKEN.lower()
    message = DepositMessage(
        id=deposit_id(CHAIN, tx, native, -1), chain=CHAIN,
        chain_id=settings.chains[CHAIN].chain_id, tx_hash=tx, log_index=-1,
        transfer_index=-1, block_number=100, block_hash="0x" + secrets.token_hex(32),
        block_time=int(datetime.now(UTC).timestamp()), token=native,
        from_address="0x" + "2" * 40, to_address=intent.intent_address,
        amount=intent.total_due,
    )  # fmt: skip
    topic = deposits_topic(settings.kafka.topic_prefix, CHAIN)
    await produce(
        settings.kafka.bootstrap_servers, topic, [(intent.intent_address, encode(message))]
    )
    env = daemon_env(settings, INTENTD__KAFKA__LIFECYCLE_GROUP=f"slip-{secrets.token_hex(4)}")
    log = tmp_path / "lifecycle.log"

    crashing = start_daemon(
        ["lifecycle"], {**env, "INTENTD_CRASH_AT": "lifecycle.after_revaluation"}, log
    )
    assert await wait_exit(crashing, 60) == CRASH_EXIT_CODE, log.read_text()
    assert "crash point reached" in log.read_text()
    assert await intent_store.get_by_id(pool, intent.id) == intent  # nothing was stored
    assert not await pool.fetchval("SELECT count(*) FROM deposits WHERE tx_hash = $1", tx)

    restarted = start_daemon(["lifecycle"], env, log)
    try:
        deadline = asyncio.get_running_loop().time() + 60
        while not await pool.fetchval("SELECT count(*) FROM deposits WHERE tx_hash = $1", tx):
            assert asyncio.get_running_loop().time() < deadline, log.read_text()
            await asyncio.sleep(0.2)
    finally:
        restarted.terminate()
        assert await wait_exit(restarted, 30) == 0, log.read_text()
    rows = await pool.fetch(
        "SELECT disposition, amount, valuation FROM deposits WHERE intent_id = $1", intent.id
    )
    assert len(rows) == 1 and rows[0]["disposition"] == "credited"
    rate = Rate.of_json(orjson.loads(rows[0]["valuation"]))
    assert rate.used[0].source == "chainlink" and rate.used[0].round_id is not None
    row = await intent_store.get_by_id(pool, intent.id)
    assert row is not None and row.owed is not None
    expected = revalue(
        row.owed, rate, total_due=intent.total_due, fees=intent.app_fee_in_asset,
        decimals_in=18, decimals_out=18,
    )  # fmt: skip
    assert (row.received, row.event_sequence) == (intent.total_due, 1)  # credited once
    assert (row.total_due, row.amount_out) == (expected.total_due, expected.amount_out)
    funded = row.total_due <= row.received
    assert row.status.value == ("FUNDED" if funded else "PENDING")
