"""A client's cap of intents awaiting payment on real PostgreSQL (issue 18, item 3): it
holds under concurrent creates from several writers (several API processes), frees a
place when an intent leaves PENDING, and is refused with 409 ``open_intent_limit``
with exit 3 from the CLI (the API's answer: tests/integration/api/test_api_open_intent_limit.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest
from tests.integration.api.test_api_trigger_sessions import PAYEE
from tests.support import ROOT, daemon_env

from intentd.adapters.postgres import Pool
from intentd.adapters.postgres.intent_inserts import AddressIndexes, PostgresIntentStore
from intentd.contract.record import IntentRow
from intentd.custody import IntentKeys
from intentd.intents.open_limit import OpenIntentLimit
from intentd.intents.service import IntentRequest, create_intent
from intentd.intents.writer import IntentWriter
from intentd.settings import Settings

pytestmark = pytest.mark.integration


def request(settings: Settings) -> IntentRequest:
    usdc = next(t.address for t in settings.chains["BASE_TESTNET"].tokens if t.symbol == "USDC")
    return IntentRequest(
        amount="1",
        token_in=usdc,
        source_chain="BASE_TESTNET",
        destination_chain="ARBITRUM_TESTNET",
        recipient=PAYEE,
        refund_address=PAYEE,
    )


async def pending(pool: Pool, client: UUID) -> int:
    count: int = await pool.fetchval(
        "SELECT count(*) FROM intents WHERE client_id = $1 AND status = 'PENDING'", client
    )
    return count


async def test_concurrent_creates_from_several_writers_never_pass_a_clients_cap(
    pool: Pool, settings: Settings
) -> None:
    """Four writers (as four API processes), each writing up to three groups at once, get
    240 creates of two clients at the same moment; each client may hold 25."""
    cap = 25
    keys = IntentKeys(settings.mnemonic())
    writers = [
        IntentWriter(
            PostgresIntentStore(pool, AddressIndexes(block=64)),
            keys,
            max_batch=8,
            max_in_flight=3,
            max_pending=cap,
        )
        for _ in range(4)
    ]
    clients = [uuid4(), uuid4()]
    planned = request(settings)

    async def create(n: int) -> IntentRow:
        return await create_intent(
            settings,
            writers[n % 4],
            planned,
            client_id=clients[n % 2],
            now=datetime.now(UTC),
        )

    answers = await asyncio.gather(*(create(n) for n in range(240)), return_exceptions=True)

    made = [a for a in answers if isinstance(a, IntentRow)]
    refused = [a for a in answers if isinstance(a, OpenIntentLimit)]
    assert len(made) + len(refused) == 240, [a for a in answers if isinstance(a, Exception)]
    assert [await pending(pool, c) for c in clients] == [cap, cap]
    assert sorted(str(r.client_id) for r in made) == sorted(str(c) for c in clients * cap)


async def test_a_place_frees_when_an_intent_is_paid_expires_or_is_cancelled(
    pool: Pool, settings: Settings
) -> None:
    writer = IntentWriter(PostgresIntentStore(pool), IntentKeys(settings.mnemonic()), max_pending=2)
    client = uuid4()

    async def create() -> IntentRow:
        return await create_intent(
            settings, writer, request(settings), client_id=client, now=datetime.now(UTC)
        )

    first, _ = await create(), await create()
    with pytest.raises(OpenIntentLimit):
        await create()
    for status in ("FUNDED", "EXPIRED"):  # funded in full, or expired
        await pool.execute("UPDATE intents SET status = $2 WHERE id = $1", first.id, status)
        first = await create()
        with pytest.raises(OpenIntentLimit):
            await create()
    assert await pending(pool, client) == 2


def cli_create(settings: Settings, client: UUID, cap: int) -> subprocess.CompletedProcess[str]:
    usdc = next(t.address for t in settings.chains["BASE_TESTNET"].tokens if t.symbol == "USDC")
    env = daemon_env(settings, INTENTD__INTENTS__MAX_OPEN_PER_CLIENT=str(cap))
    return subprocess.run(
        [
            sys.executable, "-m", "intentd", "--config", str(ROOT / "config/local.toml"),
            "intents", "create", "--source-chain", "BASE_TESTNET",
            "--destination-chain", "ARBITRUM_TESTNET", "--token-in", usdc, "--amount", "1",
            "--recipient", PAYEE, "--refund-address", PAYEE, "--client-id", str(client),
        ],
        capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=60,
    )  # fmt: skip


async def test_the_cli_refuses_a_create_past_the_cap_with_exit_3(settings: Settings) -> None:
    client = uuid4()
    assert (await asyncio.to_thread(cli_create, settings, client, 1)).returncode == 0
    refused = await asyncio.to_thread(cli_create, settings, client, 1)
    assert refused.returncode == 3, refused.stderr
    assert "[open_intent_limit]" in refused.stderr
    assert "cap of 1 intents awaiting payment" in refused.stderr
